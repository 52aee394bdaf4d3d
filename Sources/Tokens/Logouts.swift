// Logouts: an operator's logout on the token loop (`oauth-relay logout`, `DELETE
// /identities/NAME/token`) — the identity's store entries forgotten (the shared one on every
// replica), and its refresh token revoked at the IdP through IdPClient, once its endpoints are
// known.

import FoundationEssentials
import Logging
import OAuth2
import SafeText

/// A logout's refresh token, waiting for discovery to name the revocation endpoint.
struct PendingRevocation {
    let refreshToken: Secret
    let completion: (@Sendable (LogoutOutcome) -> Void)?
}

/// A closure of the token loop carried through a `@Sendable` completion: `@unchecked` because a
/// revocation's completion runs on the token loop too (IdPClient's answers, or at once).
private struct OnTokenLoop: @unchecked Sendable {
    let run: () -> Void
}

/// A logout of an `auto` identity that came while it resolved: done once the resolution ends,
/// with the store entry of the client it learnt.
struct PendingLogout {
    let refreshToken: Secret?
    let listener: LogoutListener?
}


/// Runs on the token loop only.
final class Logouts {
    private let idp: IdPClient
    private let logger: Logger
    /// The token store, when the configuration has one.
    private let persistence: TokenPersistence?
    private unowned let schedule: any FetchSchedule
    /// Logouts whose revocation waits for the identity's discovery.
    private var revocationsAwaitingDiscovery: [Int: [PendingRevocation]] = [:]
    /// Logouts of `auto` identities waiting for their resolution.
    private var logoutsAwaitingResolution: [Int: [PendingLogout]] = [:]

    init(idp: IdPClient, logger: Logger, persistence: TokenPersistence?, schedule: any FetchSchedule) {
        self.idp = idp
        self.logger = logger
        self.persistence = persistence
        self.schedule = schedule
    }

    /// Forgets the identity's store entries (the file's, and the shared one for every replica)
    /// and revokes `refreshToken` (or the one the entry held) at the IdP's revocation endpoint,
    /// when it has one. Right after a start (`oauth-relay logout` without a running relay) the
    /// endpoints may still be being discovered: the revocation then waits for discovery's one
    /// answer.
    func logout(_ tokens: IdentityTokens, refreshToken held: Secret?, completion listener: LogoutListener?) {
        // An `auto` identity's login is kept under the client it learns: its entry is read (and
        // removed) once the resolution under way has ended, not under the identity as configured.
        if tokens.update({ $0.needsResolution && $0.status(at: monotonicSeconds()).state == .resolving }) {
            logoutsAwaitingResolution[tokens.slot, default: []].append(PendingLogout(refreshToken: held, listener: listener))
            return
        }
        let refreshToken = held ?? persistence?.read(tokens).refreshToken
        persistence?.remove(tokens, lockTimeout: TokenPersistence.lockWait(idp.limits))
        let name = tokens.identity.name
        if let shared = schedule.sharedStore(for: tokens) {
            shared.remove(tokens) { [logger] removal in
                if case .failed = removal {
                    logger.warning("logout not shared", metadata: ["identity": .string(name), "shared_store": .string("\(removal)")])
                }
                listener?.sharedStore?(removal)
            }
        } else {
            listener?.sharedStore?(.notShared)
        }
        let completion = listener?.revocation
        guard let refreshToken else {
            completion?(.nothingToRevoke)
            return
        }
        // An `auto` identity's first resolution learns its endpoints as discovery does.
        let (endpoints, discovering) = tokens.update { ($0.endpoints, $0.isDiscovering || $0.status(at: monotonicSeconds()).state == .resolving) }
        if endpoints == nil && discovering {
            revocationsAwaitingDiscovery[tokens.slot, default: []].append(PendingRevocation(refreshToken: refreshToken, completion: completion))
            return
        }
        revoke(refreshToken, of: tokens, at: endpoints, completion: completion)
    }

    /// A refresh token that a fetch a logout abandoned brought anyway (the IdP rotated the one the
    /// logout revoked): revoked as well, best effort, so the logout leaves no login alive at the IdP.
    func revokeAfterLogout(_ refreshToken: Secret, of tokens: IdentityTokens) {
        let endpoints = tokens.update { $0.endpoints }
        revoke(refreshToken, of: tokens, at: endpoints, completion: nil)
    }

    /// `logout` for the token loop's own use: `then` runs on the token loop once the IdP answered
    /// the revocation (or there was none to send, or stopping cancelled it).
    func logout(_ tokens: IdentityTokens, refreshToken held: Secret?, then: @escaping () -> Void) {
        let next = OnTokenLoop(run: then)
        logout(tokens, refreshToken: held, completion: LogoutListener(revocation: { _ in next.run() }))
    }

    /// Removes the identity's store entries (the file's, and the shared one for every replica),
    /// revoking nothing: its login is for a client its server no longer knows (AutoResolver).
    func forgetStored(_ tokens: IdentityTokens) {
        persistence?.remove(tokens, lockTimeout: TokenPersistence.lockWait(idp.limits))
        let name = tokens.identity.name
        schedule.sharedStore(for: tokens)?.remove(tokens) { [logger] removal in
            if case .failed = removal {
                logger.warning("login removal not shared", metadata: ["identity": .string(name), "shared_store": .string("\(removal)")])
            }
        }
    }

    /// An `auto` identity's resolution ended (or was overtaken and runs again): the logouts that
    /// came meanwhile are done now, with the entry of the client it learnt (if it learnt one).
    func resolutionEnded(_ tokens: IdentityTokens) {
        guard let waiting = logoutsAwaitingResolution.removeValue(forKey: tokens.slot) else { return }
        for pending in waiting { logout(tokens, refreshToken: pending.refreshToken, completion: pending.listener) }
    }

    /// Discovery (or an `auto` identity's resolution) of `tokens` ended (found the endpoints or
    /// not): the logouts waiting for it revoke now.
    func revokeAfterDiscovery(_ tokens: IdentityTokens) {
        guard let waiting = revocationsAwaitingDiscovery.removeValue(forKey: tokens.slot) else { return }
        let endpoints = tokens.update { $0.endpoints }
        for pending in waiting { revoke(pending.refreshToken, of: tokens, at: endpoints, completion: pending.completion) }
    }

    /// The token thread stops: the logouts still waiting for discovery hear that their
    /// revocation did not happen.
    func abandonRevocationsAwaitingDiscovery() {
        let logouts = logoutsAwaitingResolution.values.joined()
        logoutsAwaitingResolution.removeAll()
        for pending in logouts {
            let reason = "the relay stopped before the identity's resolution ended"
            pending.listener?.sharedStore?(.failed(reason: reason))
            pending.listener?.revocation?(.revocationFailed(reason))
        }
        let waiting = revocationsAwaitingDiscovery.values.joined()
        revocationsAwaitingDiscovery.removeAll()
        for pending in waiting { pending.completion?(.revocationFailed("the relay stopped before the IdP's endpoints were discovered")) }
    }

    private func revoke(_ refreshToken: Secret, of tokens: IdentityTokens, at endpoints: IdentityEndpoints?,
                        completion: (@Sendable (LogoutOutcome) -> Void)?) {
        let name = tokens.identity.name
        guard let endpoints else {
            let reason = "the IdP's endpoints are not known (discovery has not succeeded), so the refresh token was not revoked"
            logger.warning("refresh token revocation failed", metadata: ["identity": .string(name), "error": .string(reason)])
            completion?(.revocationFailed(reason))
            return
        }
        guard let revocation = endpoints.revocation else {
            completion?(.nothingToRevoke)
            return
        }
        let unsigned = TokenRequest.revocation(for: tokens.identity, token: refreshToken, hint: .refreshToken, at: revocation,
                                               tokenEndpoint: endpoints.token)
        // Cancelled as the loop stops: nobody learns more than this.
        let stopped: () -> Void = { completion?(.revocationFailed("the relay stopped before the IdP answered the revocation")) }
        idp.send(unsigned, for: tokens, stopped: stopped) { [self] result, request in
            switch result {
            case .success(let reply):
                do throws(TokenEndpointError) {
                    try request.parseRevocation(reply, unixTime: Date().timeIntervalSince1970)
                    logger.info("refresh token revoked", metadata: ["identity": .string(name)])
                    completion?(.revoked)
                } catch {
                    logger.warning("refresh token revocation refused", metadata: ["identity": .string(name), "error": .string("\(error)")])
                    completion?(.revocationFailed("\(error)"))
                }
            case .failure(let error):
                logger.warning("refresh token revocation failed", metadata: ["identity": .string(name), "error": .string("\(error)")])
                completion?(.revocationFailed("\(error)"))
            }
        }
    }
}
