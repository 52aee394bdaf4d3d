// AutoResolver: drives each `auto` identity's AutoResolution (OAuth2/AutoResolution.swift) on
// the token loop: its requests go through IdPClient (to the resource with the resource's TLS
// configuration), its registration is read from and kept in the token store, and the outcome goes
// to the lifecycle (`resolved`, `resolutionFailed`), after which the identity's next action
// follows. Once resolved, the identity's login is read from the store: the entry's settings
// include the client it learnt. It also forgets a client the authorization server no longer
// knows (`clientUnknown`), deletes one on an operator's logout (RFC 7592), and keeps the scope a
// step-up login widened with the registration (`scopeLearnt`), so that a restart asks for it
// again and finds the login kept for it.

import Endpoints
import FoundationEssentials
import HTTPFields
import Logging
import OAuth2
import SafeText
import TokenStore

/// Runs on the token loop only.
final class AutoResolver {
    private let idp: IdPClient
    private let clients: RegisteredClients
    private let logouts: Logouts
    private let logger: Logger
    private unowned let schedule: any FetchSchedule
    /// Reads the identity's login from the store(s) (TokenFetcher.readStoredLogin).
    private let readStoredLogin: (IdentityTokens) -> Void
    /// The client each resolved identity uses and its key, by slot (what `forgetClient` deletes
    /// when no store keeps it, what `scopeLearnt` keeps again).
    private var held: [Int: (client: RegisteredClient, key: RegistrationKey)] = [:]
    /// Each slot's resolutions so far: one whose number is no longer its slot's was overtaken (a
    /// `forgetClient` came meanwhile, or a reload retired the slot), and its outcome is dropped.
    private var generations: [Int: Int] = [:]

    /// A resolution may register a client; false: one that would ends there (`notRegistering`).
    private let registers: Bool

    init(idp: IdPClient, clients: RegisteredClients, logouts: Logouts, logger: Logger, schedule: any FetchSchedule,
         registers: Bool = true, readStoredLogin: @escaping (IdentityTokens) -> Void) {
        self.registers = registers
        self.idp = idp
        self.clients = clients
        self.logouts = logouts
        self.logger = logger
        self.schedule = schedule
        self.readStoredLogin = readStoredLogin
    }

    /// Starts the chain for `tokens` (an unresolved `auto` identity; the lifecycle answers
    /// `.resolve` once until the outcome is reported).
    func resolve(_ tokens: IdentityTokens) {
        // The initial access token as its file holds it now (`auto.initialAccessTokenFile`), not as loaded.
        var identity = tokens.configured
        if identity.auto?.initialAccessToken != nil, let current = idp.currentCredential(.initialAccessToken, of: tokens) {
            identity.auto?.initialAccessToken = current
        }
        let resolution = AutoResolution(identity: identity)
        step(resolution.firstStep, of: resolution, for: tokens, generation: generations[tokens.slot, default: 0])
    }

    private func step(_ step: AutoResolution.Step, of resolution: AutoResolution, for tokens: IdentityTokens, generation: Int) {
        // Once stopping, no answer comes: the request is cancelled (IdPClient).
        let answered = { [self] (result: Result<TokenEndpointReply, TokenEndpointError>) in
            var resolution = resolution
            let next = switch result {
            case .success(let reply): resolution.received(reply, unixTime: Date().timeIntervalSince1970)
            case .failure(let error): resolution.failed(error)
            }
            self.step(next, of: resolution, for: tokens, generation: generation)
        }
        switch step {
        case .fetch(let url, let toResource):
            idp.send("GET", url, headers: [HTTPField(name: "Accept", value: "application/json")], for: tokens, toResource: toResource,
                     completion: answered)
        case .probe(let url):
            // Its status and WWW-Authenticate are the answer: a long body or an event stream is not read.
            idp.send("GET", url, for: tokens, toResource: true, headOnly: true, completion: answered)
        case .register(let request) where !registers:
            ended(.failure(.notRegistering(endpoint: redactedURL(request.endpoint))), for: tokens)
        case .register(let request):
            var headers = [HTTPField(name: "Content-Type", value: "application/json"), HTTPField(name: "Accept", value: "application/json")]
            if let authorization = request.authorization { headers.append(HTTPField(name: "Authorization", value: authorization.value)) }
            idp.send("POST", request.endpoint, headers: headers, body: request.body, for: tokens, toResource: false, completion: answered)
        case .loadClient(let key):
            clients.read(key) { [self] client in
                var resolution = resolution
                self.step(resolution.loaded(client, unixTime: Date().timeIntervalSince1970), of: resolution, for: tokens,
                          generation: generation)
            }
        case .resolved(let resolved):
            guard generations[tokens.slot, default: 0] == generation else { return overtaken(resolved, for: tokens) }
            if resolved.newlyRegistered { clients.write(resolved.client, for: resolved.key) }
            ended(.success(resolved), for: tokens)
        case .failed(let error):
            guard generations[tokens.slot, default: 0] == generation else { return overtaken(nil, for: tokens) }
            ended(.failure(error), for: tokens)
        }
    }

    /// A resolution overtaken by a `forgetClient` or a reload ended: nothing of it is kept (not
    /// in the stores, not held), a client it registered is deleted at its server (best effort),
    /// and an identity still in force resolves again.
    private func overtaken(_ resolved: AutoResolved?, for tokens: IdentityTokens) {
        let name = tokens.configured.name
        logger.info("identity resolution overtaken; its outcome is dropped", metadata: ["identity": .string(name)])
        if let resolved, resolved.newlyRegistered {
            deleteAtServer(resolved.client, for: tokens, because: "registered by a resolution that was overtaken")
        }
        tokens.publish { lifecycle in
            lifecycle.resolutionDropped()
            return true
        }
        // The logouts waiting for it go now, with the identity as it stands.
        logouts.resolutionEnded(tokens)
        logouts.revokeAfterDiscovery(tokens)
        if schedule.isInForce(tokens) { schedule.runNextAction(tokens) }
    }

    /// RFC 7592: deletes `client` at its server with its registration access token, when it has
    /// both; best effort, the outcome logged.
    private func deleteAtServer(_ client: RegisteredClient, for tokens: IdentityTokens, because reason: String) {
        guard let uri = client.registrationClientUri, let token = client.registrationAccessToken else { return }
        let name = tokens.configured.name
        idp.send("DELETE", uri, headers: [HTTPField(name: "Authorization", value: "Bearer " + token.value)], for: tokens,
                 toResource: false) { [self] result in
            logger.info("registered client deleted at its server", metadata: [
                "identity": .string(name), "client_id": .string(client.clientId), "reason": .string(reason),
                "outcome": .string(ClientDeletion(result).description),
            ])
        }
    }

    private func ended(_ outcome: Result<AutoResolved, AutoSetupError>, for tokens: IdentityTokens) {
        let now = monotonicSeconds()
        let name = tokens.configured.name
        let interactive = tokens.configured.grant.isInteractive
        tokens.publish { lifecycle in
            switch outcome {
            case .success(let resolved):
                lifecycle.resolved(resolved)
                // Requests wait for the login kept for the learnt client rather than be told to log in.
                if interactive && clients.hasStore { lifecycle.awaitStoredLogin() }
            case .failure(let error):
                lifecycle.resolutionFailed(error, at: now)
            }
            return true
        }
        switch outcome {
        case .success(let resolved):
            held[tokens.slot] = (resolved.client, resolved.key)
            clients.settingsChanged(tokens)
            logger.info("identity resolved", metadata: [
                "identity": .string(name), "resource": .string(resolved.facts.resource),
                "issuer": .string(resolved.facts.authorizationServer), "client_id": .string(resolved.facts.clientId),
                "client_from": .string(resolved.facts.clientSource.rawValue),
            ])
            // A logout that came meanwhile removes the learnt client's entry before it is read.
            logouts.resolutionEnded(tokens)
            if interactive { readStoredLogin(tokens) }
        case .failure(let error):
            logger.warning("identity not resolved", metadata: [
                "identity": .string(name), "code": .string(error.code), "error": .string(error.description),
            ])
            logouts.resolutionEnded(tokens)
        }
        // A logout that came meanwhile revokes now, at the endpoints learnt (or says it could not).
        logouts.revokeAfterDiscovery(tokens)
        schedule.runNextAction(tokens)
    }

    /// The token endpoint answered `invalid_client` to the registered client of `tokens`: the
    /// registration is dropped (lifecycle and stores), and the chain runs again at the next action.
    func clientUnknown(_ tokens: IdentityTokens, refusal: TokenEndpointError) {
        let now = monotonicSeconds()
        var dropped: (key: RegistrationKey, clientId: String, needsConfiguration: Bool)?
        tokens.publish { lifecycle in
            let clientId = lifecycle.autoFacts?.clientId
            guard let key = lifecycle.clientUnknown(at: now, because: refusal.code), let clientId else { return false }
            dropped = (key, clientId, lifecycle.status(at: now).state == .needsConfiguration)
            return true
        }
        guard let dropped else { return }
        // Its login too: the refresh token is for a client the server no longer knows.
        logouts.forgetStored(tokens)
        let client = held.removeValue(forKey: tokens.slot)?.client
        // Only the client refused: another process may have registered a new one meanwhile.
        clients.remove(identity: dropped.key.identity, clientId: dropped.clientId)
        // The old client's entries are no longer this identity's: not watched, not written.
        clients.settingsChanged(tokens)
        let fields: Logger.Metadata = ["identity": .string(tokens.configured.name), "issuer": .string(dropped.key.issuer),
                                       "client_id": .string(dropped.clientId)]
        if dropped.needsConfiguration {
            logger.error("the authorization server refused the client it just registered; not registering again", metadata: fields)
        } else {
            logger.warning("the authorization server no longer knows the registered client; registering again", metadata: fields)
        }
        if let client, client.clientId == dropped.clientId {
            deleteAtServer(client, for: tokens, because: "refused with invalid_client")
        }
    }

    /// `--forget-client`: deletes the registration of `tokens` at its authorization server
    /// (RFC 7592, with its registration access token), removes it from the stores, and makes the
    /// identity resolve again at its next need. The client is the one in use, else the one kept
    /// (an identity that has not resolved in this process). `completion` hears how it went.
    func forgetClient(_ tokens: IdentityTokens, completion: @escaping (ClientDeletion) -> Void) {
        // Its login first, as a logout does: the refresh token revoked with the client it was
        // issued to (answered before that client is deleted), and the store entries removed.
        logouts.logout(tokens, refreshToken: tokens.update { $0.heldRefreshToken }) { [self] in
            forgetClientAfterLogout(tokens, completion: completion)
        }
    }

    private func forgetClientAfterLogout(_ tokens: IdentityTokens, completion: @escaping (ClientDeletion) -> Void) {
        let name = tokens.configured.name
        // A resolution under way is overtaken: its outcome is dropped, and it runs again.
        generations[tokens.slot, default: 0] += 1
        tokens.publish { lifecycle in lifecycle.clientForgotten() != nil }
        let inUse = held.removeValue(forKey: tokens.slot)?.client
        guard let client = inUse ?? clients.readKept(identity: name) else { return completion(.noRegistration) }
        clients.remove(identity: name, clientId: client.clientId)
        clients.settingsChanged(tokens)
        guard let uri = client.registrationClientUri, let token = client.registrationAccessToken else {
            return completion(.notDeletable)
        }
        idp.send("DELETE", uri, headers: [HTTPField(name: "Authorization", value: "Bearer " + token.value)], for: tokens,
                 toResource: false, stopped: { completion(.failed("the relay is stopping")) }) { [self] result in
            let deletion = ClientDeletion(result)
            logger.info("registered client forgotten", metadata: [
                "identity": .string(name), "client_id": .string(client.clientId), "outcome": .string(deletion.description),
            ])
            completion(deletion)
        }
    }

    /// A login of `tokens` is about to make `widened` the identity (a step-up's scope joined to
    /// its own): the scope is kept with the registration (both stores), and the entry the login's
    /// tokens go to is the one for the widened settings. Called before the tokens are kept.
    func scopeLearnt(_ tokens: IdentityTokens, widened: Identity) {
        guard var kept = held[tokens.slot], kept.client.learntScope != widened.scope else { return }
        kept.client.learntScope = widened.scope
        held[tokens.slot] = kept
        clients.write(kept.client, for: kept.key)
        clients.settingsChanged(tokens, to: widened)
        logger.info("scope widened by a step-up login; kept with the registered client", metadata: [
            "identity": .string(tokens.configured.name), "scope": .string(widened.scope ?? ""),
        ])
    }

    /// A reload retired the slot: a resolution under way for it is overtaken.
    func forget(slot: Int) {
        held[slot] = nil
        generations[slot, default: 0] += 1
    }
}

/// How an RFC 7592 deletion of a registered client went.
public enum ClientDeletion: Sendable, Equatable, CustomStringConvertible {
    /// 200 or 204.
    case deleted
    /// 401 or 404: the registration is gone anyway (or its access token is).
    case alreadyGone(status: Int)
    /// No registration was held or kept.
    case noRegistration
    /// Kept without `registration_client_uri` or a registration access token: removed here only.
    case notDeletable
    /// The server refused otherwise, or could not be reached.
    case failed(String)

    init(_ result: Result<TokenEndpointReply, TokenEndpointError>) {
        switch result {
        case .success(let reply) where reply.status == 200 || reply.status == 204: self = .deleted
        case .success(let reply) where reply.status == 401 || reply.status == 404: self = .alreadyGone(status: reply.status)
        case .success(let reply): self = .failed("the registration endpoint answered \(reply.status)")
        case .failure(let error): self = .failed("\(error)")
        }
    }

    public var description: String {
        switch self {
        case .deleted: "deleted at the authorization server"
        case .alreadyGone(let status): "the authorization server answered \(status): the registration is gone there already"
        case .noRegistration: "no registered client was held"
        case .notDeletable: "the server gave no registration_client_uri or access token: removed from the store only"
        case .failed(let reason): "not deleted at the authorization server (\(reason)); removed from the store"
        }
    }
}
