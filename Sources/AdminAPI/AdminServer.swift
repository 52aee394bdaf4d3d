// AdminServer: the operator's listener (`admin`, loopback by default), on the main thread's
// loop beside the signal watchers, so it never shares a worker with client traffic.
//
//   GET    /healthz                    200 while the process serves
//   GET    /version                    the version and the git commit the binary was built from
//   GET    /readyz                     200 once every non-interactive identity holds a valid
//                                      token (the listeners are bound before this server
//                                      starts); else 503 naming what is missing. An identity
//                                      with per-caller tokens holds none of its own: it counts
//                                      once it knows its token endpoint
//   GET    /metrics                    Prometheus text format (see RelayMetrics)
//   GET    /identities                 each identity's grant, state, expiry and last error —
//                                      never a token or a secret; for per-caller tokens, the
//                                      callers' entries and their bound
//   POST   /identities/NAME/refresh    fetch a new token now (202); 409 for per-caller tokens
//   POST   /identities/NAME/login      start a person's login: 200 with the URL that starts a
//                                      browser login, or 202 once a device login is starting
//                                      (its code then shows in /identities)
//   DELETE /identities/NAME/client     an `auto` identity: forget its registered client (RFC 7592
//                                      deletion at its server, store), resolve again at next need
//   DELETE /identities/NAME/token      forget the token and refresh token (204; per-caller
//                                      tokens: every caller's), revoking the
//                                      refresh token at the IdP when it has a revocation endpoint;
//                                      with a shared store, on every replica: answered once Redis
//                                      removed the entry, 503 when it could not (the other replicas
//                                      keep the login); the answer waits without holding up the
//                                      other admin requests
//   POST   /reload                     re-read the configuration file, like SIGHUP: 200 with
//                                      what changed, or 422 with every error (nothing changed)
//
// Answers are JSON; errors are problem+json like the relay's own. Web pages get nothing here
// (AdminGate.swift): a Host the listener does not serve is answered 421, a request a browser
// marks as another site's 403, before any endpoint runs.
//
// The AdminAPI module: this listener on LocalHTTP, with no part of the proxy. What it needs of
// the settings in force (the Host names it serves) and of a reload is handed to it.

import BrowserSafety
import Dispatch
import EventLoop
import LocalHTTP
import Locking
import LoginPages
import OAuth2
import RelayMetrics
import SafeText
import Tokens
import HTTPFields

/// What a configuration reload did.
public enum ReloadOutcome {
    /// In force for new requests. `summary`: a JSON object describing the change.
    case applied(summary: String)
    /// Nothing changed; each error with its JSON path.
    case rejected(errors: [String])
}

public final class AdminServer {
    private let tokens: TokenService?
    private let metrics: RelayMetrics?
    private let reload: () -> ReloadOutcome
    /// What `GET /version` answers.
    private let build: RelayBuild
    /// The Host names this listener serves, as the settings in force say (they change on reload).
    private let hosts: () -> ListenerHosts
    private var server: LocalHTTPServer?
    /// The longest a logout's answer waits (`logoutWaitMilliseconds`).
    private let logoutWait: UInt64

    /// `storeTimeoutMilliseconds`: `store.timeoutMilliseconds` when the relay shares its tokens.
    public init(loop: EventLoop, address: SocketAddress, tokens: TokenService?, metrics: RelayMetrics?, build: RelayBuild,
                storeTimeoutMilliseconds: Int? = nil,
                hosts: @escaping () -> ListenerHosts, reload: @escaping () -> ReloadOutcome) throws(UVError) {
        self.tokens = tokens
        logoutWait = Self.logoutWaitMilliseconds(storeTimeoutMilliseconds: storeTimeoutMilliseconds)
        self.build = build
        self.metrics = metrics
        self.hosts = hosts
        self.reload = reload
        let router = makeRouter()
        server = try LocalHTTPServer(loop: loop, address: address,
                                     badRequest: { Self.problem(400, "bad-request", "Bad Request", $0) },
                                     answer: { [unowned self] request in
                                         if let refusal = gate(request) { return .now(refusal) }
                                         return router.answer(to: request)
                                     })
    }

    /// The refusal of a request a web page could have made a browser send (AdminGate), or nil.
    private func gate(_ request: LocalRequest) -> LocalResponse? {
        switch AdminGate.refusal(request, hosts: hosts()) {
        case nil:
            return nil
        case .host(let host):
            metrics?.countRefused(reason: BrowserRefusal.host.rawValue)
            return Self.problem(421, "misdirected-request", "Misdirected Request",
                                "the admin listener does not serve the host \(JSONText.quote(host)): it answers to loopback names "
                                    + "and the names in hosts")
        case .crossSite(let origin):
            metrics?.countRefused(reason: BrowserRefusal.crossSite.rawValue)
            return Self.problem(403, "cross-site-request", "Forbidden",
                                "the admin listener answers no request a web page made the browser send"
                                    + (origin.map { " (origin \(JSONText.quote($0)))" } ?? ""))
        }
    }

    public var boundAddress: SocketAddress? { server?.boundAddress }

    /// Stops listening and closes the admin connections.
    public func close() {
        server?.close()
        server = nil
    }

    /// The admin endpoints (see the top of this file). Unowned: the admin server owns the HTTP
    /// server, and so the router, and outlives its requests.
    private func makeRouter() -> LocalRouter {
        var router = LocalRouter(
            notFound: { Self.problem(404, "not-found", "Not Found", "no admin endpoint \($0.path)") },
            methodNotAllowed: { request, allowed in
                var answer = Self.problem(405, "method-not-allowed", "Method Not Allowed", "\(request.method) is not allowed on \(request.path)")
                answer.headers = [("Allow", allowed.joined(separator: ", "))]
                return answer
            })
        router.add("GET", "/healthz") { _, _ in LocalResponse(status: 200, body: "{\"status\":\"serving\"}\n") }
        router.add("GET", "/version") { [unowned self] _, _ in LocalResponse(status: 200, body: build.json + "\n") }
        router.add("GET", "/readyz") { [unowned self] _, _ in readiness() }
        router.add("GET", "/identities") { [unowned self] _, _ in identities() }
        router.add("GET", "/metrics") { [unowned self] _, _ in exposition() }
        router.add("POST", "/reload") { [unowned self] _, _ in reloaded() }
        router.add("POST", "/identities/{name}/refresh") { [unowned self] request, parameters in
            withIdentity(parameters["name"]!, request) { tokens, identity in
                if let grant = identity.identity.grant.callerGrant {
                    return Self.problem(409, "per-caller-tokens", "Conflict",
                                        "identity \(identity.identity.name) has no token of its own to refresh: it exchanges each caller's "
                                            + "token (\(grant.configKey): \"caller\"); DELETE /identities/\(identity.identity.name)/token "
                                            + "forgets every caller's")
                }
                tokens.refreshNow(identity)
                return LocalResponse(status: 202, body: "{\"identity\":\(JSONText.quote(identity.identity.name)),\"refresh\":\"started\"}\n")
            }
        }
        router.add("POST", "/identities/{name}/login") { [unowned self] request, parameters in
            // `?force=1` (`oauth-relay login --force`): a device login starts even while a token is held.
            let force = request.target.split(separator: "?", maxSplits: 1).dropFirst().first?.split(separator: "&").contains("force=1") ?? false
            return withIdentity(parameters["name"]!, request) { tokens, identity in startLogin(tokens, identity, force: force) }
        }
        router.addLater("DELETE", "/identities/{name}/token", deadline: { [logoutWait] parameters in
            Self.logoutDeadline(identity: parameters["name"]!, milliseconds: logoutWait)
        }) { [unowned self] request, parameters, reply in
            var found: (TokenService, IdentityTokens)?
            let refusal = withIdentity(parameters["name"]!, request) { tokens, identity in
                found = (tokens, identity)
                return LocalResponse(status: 204, body: "")
            }
            guard let (tokens, identity) = found else { return reply.send(refusal) }
            logout(tokens, identity, reply: reply)
        }
        router.add("DELETE", "/identities/{name}/client") { [unowned self] request, parameters in
            withIdentity(parameters["name"]!, request) { tokens, identity in forgetClient(tokens, identity) }
        }
        return router
    }

    /// The longest `DELETE /identities/NAME/client` waits for the authorization server's answer
    /// to the deletion (its request is bounded by the token request timeouts). `oauth-relay
    /// logout --forget-client` waits for the answer longer than this.
    public static let forgetClientWaitSeconds = 35.0

    /// An `auto` identity's registered client forgotten: 200 with how its deletion at the
    /// authorization server went (`deleted`, `already-gone`, `not-deletable`, `none`, `failed`).
    private func forgetClient(_ tokens: TokenService, _ identity: IdentityTokens) -> LocalResponse {
        let name = identity.configured.name
        guard identity.configured.auto != nil else {
            return Self.problem(409, "not-auto", "Conflict", "identity \(name) registers no client (it is not made by \"identity\": \"auto\")")
        }
        let heard = DispatchSemaphore(value: 0)
        let outcome = Locked<ClientDeletion?>(nil)
        tokens.forgetClient(identity) { deletion in
            outcome.withLock { $0 = deletion }
            heard.signal()
        }
        _ = heard.wait(timeout: .now() + Self.forgetClientWaitSeconds)
        guard let deletion = outcome.withLock({ $0 }) else {
            return Self.problem(504, "forget-client-timed-out", "Gateway Timeout",
                                "identity \(name): the authorization server did not answer the deletion in time; the client is removed from the store")
        }
        let slug: String
        switch deletion {
        case .deleted: slug = "deleted"
        case .alreadyGone: slug = "already-gone"
        case .noRegistration: slug = "none"
        case .notDeletable: slug = "not-deletable"
        case .failed: slug = "failed"
        }
        return LocalResponse(status: 200, body: "{\"identity\":\(JSONText.quote(name)),\"client\":\(JSONText.quote(slug)),"
                             + "\"detail\":\(JSONText.quote(deletion.description))}\n")
    }

    private func startLogin(_ tokens: TokenService, _ identity: IdentityTokens, force: Bool) -> LocalResponse {
        let name = JSONText.quote(identity.identity.name)
        switch identity.identity.grant {
        case .authorizationCode:
            guard let url = LoginPaths.loginURL(for: identity.identity) else { break }
            return LocalResponse(status: 200, body: "{\"identity\":\(name),\"grant\":\"authorization_code\",\"loginUrl\":\(JSONText.quote(url))}\n")
        case .deviceCode:
            // Without `force` a login under way, or a token held, is what the caller waits for.
            if !tokens.logins.startDeviceLogin(identity, replacingLogin: force), force {
                return Self.problem(409, "login-under-way", "Conflict",
                                    "identity \(identity.identity.name) did not start a new device login: one is already under way "
                                        + "(GET /identities/\(identity.identity.name) shows its code); start again once it has ended")
            }
            return LocalResponse(status: 202, body: "{\"identity\":\(name),\"grant\":\"device_code\",\"login\":\"started\"}\n")
        default:
            break
        }
        return Self.problem(409, "not-interactive", "Conflict",
                            "identity \(identity.identity.name) does not log a person in (its grant is \(identity.identity.grant.grantType))")
    }

    /// The longest a logout's answer waits: Redis answers or fails within `store.timeoutMilliseconds`
    /// (the link gives up a command, or a first connection, after it), and so a second more; but an
    /// `auto` identity that is resolving removes its login only once its resolution has ended
    /// (several IdP requests). 5 s at least (the wait before logouts answered later), which
    /// `oauth-relay logout` (10 s) hears with the default store timeout.
    static func logoutWaitMilliseconds(storeTimeoutMilliseconds: Int?) -> UInt64 {
        max(5000, UInt64(max(0, storeTimeoutMilliseconds ?? 0)) + 1000)
    }

    /// The 503 a logout answers when its removal took longer than `milliseconds`.
    static func logoutDeadline(identity name: String, milliseconds: UInt64) -> LocalDeadline {
        let seconds = milliseconds % 1000 == 0 ? "\(milliseconds / 1000) s" : "\(milliseconds) ms"
        return LocalDeadline(milliseconds: milliseconds, response: problem(
            503, "shared-store-unavailable", "Service Unavailable",
            "identity \(name) is logged out on this replica, but the shared token store did not answer within \(seconds): the other "
                + "replicas may keep the login until its tokens expire; log out again"))
    }

    /// A logout, answered once the shared store (if any) removed the login for every replica or
    /// failed to, or else after `logoutWaitMilliseconds` (the route's deadline). The answer comes
    /// later, from the token thread: meanwhile this loop answers other requests. Never waits for
    /// the IdP: the refresh token's revocation goes on after the answer.
    private func logout(_ tokens: TokenService, _ identity: IdentityTokens, reply: LocalReply) {
        let name = identity.identity.name
        tokens.forget(identity, listener: LogoutListener(sharedStore: { outcome in
            switch outcome {
            case .removed, .notShared:
                reply.send(LocalResponse(status: 204, body: ""))
            case .failed:
                reply.send(Self.problem(503, "shared-store-unavailable", "Service Unavailable",
                                        "identity \(name) is logged out on this replica, but \(outcome)"))
            }
        }))
    }

    /// Whether an identity lets `/readyz` answer ready: a per-caller identity once it knows its
    /// token endpoint (configured, or discovered) and is not failing; an interactive one always
    /// (a person logs in later); any other once it holds a valid token.
    static func isReady(state: IdentityStatus.State, hasValidToken: Bool, perCaller: Bool, interactive: Bool,
                        knowsTokenEndpoint: Bool) -> Bool {
        if perCaller { return knowsTokenEndpoint && state != .failing }
        return interactive || hasValidToken
    }

    private func readiness() -> LocalResponse {
        let now = monotonicSeconds()
        let missing = (tokens?.identities ?? [])
            .filter { tokens in
                let status = tokens.status(at: now)
                return !Self.isReady(state: status.state, hasValidToken: status.hasValidToken, perCaller: tokens.callers != nil,
                                     interactive: tokens.identity.grant.isInteractive, knowsTokenEndpoint: tokens.knowsTokenEndpoint)
            }
            .map(\.identity.name)
        if missing.isEmpty { return LocalResponse(status: 200, body: "{\"status\":\"ready\"}\n") }
        return Self.problem(503, "not-ready", "Service Unavailable",
                            "identities without a valid token yet: \(missing.joined(separator: ", "))")
    }

    private func identities() -> LocalResponse {
        let now = monotonicSeconds()
        let entries = (tokens?.identities ?? []).map { describe($0, now: now) }
        return LocalResponse(status: 200, body: "{\"identities\":[\(entries.joined(separator: ","))]}\n")
    }

    private func exposition() -> LocalResponse {
        guard let metrics else {
            return Self.problem(404, "not-found", "Not Found", "metrics are off (\"metrics\": false in the configuration)")
        }
        let callerCaches = (tokens?.identities ?? []).compactMap { tokens in
            tokens.callers.map { callers in
                let counts = callers.counts
                return CallerCacheSample(identity: tokens.identity.name, entries: counts.entries, hits: counts.hits, misses: counts.misses,
                                         waits: counts.waits, evictions: counts.evictions)
            }
        }
        return LocalResponse(status: 200, contentType: RelayMetrics.contentType,
                             body: String(decoding: metrics.exposition(callerCaches: callerCaches), as: UTF8.self))
    }

    private func reloaded() -> LocalResponse {
        switch reload() {
        case .applied(let summary):
            return LocalResponse(status: 200, body: summary + "\n")
        case .rejected(let errors):
            return Self.problem(422, "config-invalid", "Unprocessable Content", "the configuration was not reloaded; nothing changed",
                                errors: errors)
        }
    }

    /// Runs `body` on the identity named `name`, or answers 404.
    private func withIdentity(_ name: String, _ request: LocalRequest,
                              _ body: (TokenService, IdentityTokens) -> LocalResponse) -> LocalResponse {
        guard let tokens else { return Self.problem(404, "not-found", "Not Found", "no admin endpoint \(request.path)") }
        guard let identity = tokens.tokenSet[name] else {
            return Self.problem(404, "unknown-identity", "Not Found", "no identity named \(name)")
        }
        return body(tokens, identity)
    }

    private func describe(_ identity: IdentityTokens, now: Double) -> String {
        let callers = identity.callers.map { (entries: $0.counts.entries, capacity: $0.capacity) }
        return Self.describe(identity.identity, status: identity.status(at: now), callers: callers)
    }

    /// One identity of `/identities`: each member once.
    static func describe(_ identity: Identity, status: IdentityStatus, callers: (entries: Int, capacity: Int)?) -> String {
        var fields = [
            "\"name\":\(JSONText.quote(identity.name))",
            "\"grant\":\(JSONText.quote(identity.grant.grantType))",
            "\"state\":\(JSONText.quote(status.state.rawValue))",
            "\"hasValidToken\":\(status.hasValidToken)",
            "\"hasRefreshToken\":\(status.hasRefreshToken)",
            "\"consecutiveFailures\":\(status.consecutiveFailures)",
        ]
        if let callers {
            fields.append("\"callers\":{\"entries\":\(callers.entries),\"maxCallers\":\(callers.capacity)}")
        }
        if let seconds = status.expiresInSeconds { fields.append("\"expiresInSeconds\":\(Int(seconds.rounded(.down)))") }
        if let scope = status.scope { fields.append("\"scope\":\(JSONText.quote(scope))") }
        if let who = status.loggedInAs { fields.append("\"loggedInAs\":\(JSONText.quote(who))") }
        if let device = status.deviceLogin { fields.append("\"deviceLogin\":{" + device.jsonMembers.dropFirst() + "}") }
        if let failure = status.lastLoginFailure { fields.append("\"lastLoginFailure\":\(JSONText.quote(failure))") }
        if let code = status.lastErrorCode {
            fields.append("\"lastError\":{\"code\":\(JSONText.quote(code))"
                          + (status.lastErrorDescription.map { ",\"description\":\(JSONText.quote($0))" } ?? "") + "}")
        }
        if let facts = status.auto { fields.append("\"auto\":" + Self.json(facts)) }
        if let stepUp = status.pendingStepUp { fields.append("\"pendingStepUp\":" + Self.json(stepUp)) }
        return "{" + fields.joined(separator: ",") + "}"
    }

    /// What an `auto` identity learnt and where each value came from: never a secret (the
    /// client's id, not its secret or registration access token).
    static func json(_ facts: AutoFacts) -> String {
        var members = [
            "\"resource\":\(JSONText.quote(facts.resource))",
            "\"resourceMetadataUrl\":\(JSONText.quote(facts.resourceMetadataURL))",
            "\"resourceMetadataSource\":\(JSONText.quote(facts.resourceMetadataSource.rawValue))",
            "\"authorizationServer\":\(JSONText.quote(facts.authorizationServer))",
            "\"authorizationServerSource\":\(JSONText.quote(facts.authorizationServerSource.rawValue))",
            "\"clientId\":\(JSONText.quote(facts.clientId))",
            "\"clientIdSource\":\(JSONText.quote(facts.clientSource.rawValue))",
            "\"tokenEndpointAuthMethod\":\(JSONText.quote(facts.tokenEndpointAuthMethod))",
        ]
        if let scope = facts.scope { members.append("\"scope\":\(JSONText.quote(scope))") }
        if let source = facts.scopeSource { members.append("\"scopeSource\":\(JSONText.quote(source.rawValue))") }
        // Unix seconds, as the registration's `client_id_issued_at` counts them.
        members.append("\"registeredAt\":\(Int64(facts.registeredAt.rounded(.down)))")
        return "{" + members.joined(separator: ",") + "}"
    }

    /// A step-up the identity's next login asks for.
    static func json(_ stepUp: StepUp) -> String {
        var members = ["\"scope\":[" + stepUp.scope.map(JSONText.quote).joined(separator: ",") + "]"]
        if !stepUp.acrValues.isEmpty { members.append("\"acrValues\":[" + stepUp.acrValues.map(JSONText.quote).joined(separator: ",") + "]") }
        if let maxAge = stepUp.maxAge { members.append("\"maxAge\":\(maxAge)") }
        return "{" + members.joined(separator: ",") + "}"
    }

    /// An error as the relay's data listeners write theirs (Proxy's `Problem`): a problem
    /// document (RFC 9457) whose type is `urn:oauth-relay:problem:<slug>`, with the `errors`
    /// when there are several (a configuration that failed to load).
    private static func problem(_ status: Int, _ slug: String, _ title: String, _ detail: String, errors: [String] = []) -> LocalResponse {
        var body = "{\"type\":\"urn:oauth-relay:problem:\(slug)\",\"title\":\(JSONText.quote(title)),\"status\":\(status),"
            + "\"detail\":\(JSONText.quote(detail))"
        if !errors.isEmpty { body += ",\"errors\":[" + errors.map(JSONText.quote).joined(separator: ",") + "]" }
        return LocalResponse(status: status, contentType: "application/problem+json", body: body + "}\n")
    }
}
