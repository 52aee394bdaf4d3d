import FoundationEssentials
import HTTPClient
import OAuth2
import SafeText

/// How a logout ended (`oauth-relay logout`, `DELETE /identities/NAME/token`).
public enum LogoutOutcome: Sendable, Equatable {
    /// The IdP revoked the refresh token (RFC 7009).
    case revoked
    /// No refresh token was held, or the IdP has no revocation endpoint: forgetting was all.
    case nothingToRevoke
    /// The tokens are forgotten, but the IdP did not confirm the revocation.
    case revocationFailed(String)
}

/// What became of a logout's shared store entry (`store.redis`).
public enum SharedStoreRemoval: Sendable, Equatable, CustomStringConvertible {
    /// Removed, and every replica told to forget the login.
    case removed
    /// The configuration shares no tokens.
    case notShared
    /// Redis did not remove it (unavailable, too slow, refusing): the other replicas keep the
    /// login until its tokens expire, and a replica starting meanwhile reads it back.
    case failed(reason: String)

    public var description: String {
        switch self {
        case .removed: "removed from the shared token store; every replica forgets it"
        case .notShared: "no shared token store"
        case .failed(let reason): "not removed from the shared token store (\(reason)): the other replicas keep the login "
            + "until its tokens expire; log out again once Redis is back"
        }
    }
}

/// Who hears how a logout went: `sharedStore` as soon as the shared entry is removed or not
/// (within the store's timeout), `revocation` once the IdP answered (or there was nothing to
/// revoke). Called on the token thread.
public struct LogoutListener: Sendable {
    public var sharedStore: (@Sendable (SharedStoreRemoval) -> Void)?
    public var revocation: (@Sendable (LogoutOutcome) -> Void)?

    public init(sharedStore: (@Sendable (SharedStoreRemoval) -> Void)? = nil, revocation: (@Sendable (LogoutOutcome) -> Void)? = nil) {
        self.sharedStore = sharedStore
        self.revocation = revocation
    }
}

/// A logout's refresh token, waiting for discovery to name the revocation endpoint.
struct PendingRevocation {
    let refreshToken: Secret
    let completion: (@Sendable (LogoutOutcome) -> Void)?
}

extension TokenFetcher {
    /// Forgets the identity's store entries (the file's, and the shared one for every replica)
    /// and revokes `refreshToken` (or the one the entry held) at the IdP's revocation endpoint,
    /// when it has one. Right after a start (`oauth-relay logout` without a running relay) the
    /// endpoints may still be being discovered: the revocation then waits for discovery's one
    /// answer.
    func logout(_ tokens: IdentityTokens, refreshToken held: Secret?, completion listener: LogoutListener?) {
        let refreshToken = held ?? persistence?.read(tokens).refreshToken
        persistence?.remove(tokens)
        let name = tokens.identity.name
        if let shared = sharedStore(for: tokens) {
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
        let (endpoints, discovering) = tokens.update { ($0.endpoints, $0.isDiscovering) }
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

    /// Discovery of `tokens` ended (found the endpoints or not): the logouts waiting for it revoke now.
    func revokeAfterDiscovery(_ tokens: IdentityTokens) {
        guard let waiting = revocationsAwaitingDiscovery.removeValue(forKey: tokens.slot) else { return }
        let endpoints = tokens.update { $0.endpoints }
        for pending in waiting { revoke(pending.refreshToken, of: tokens, at: endpoints, completion: pending.completion) }
    }

    /// The token thread stops: the logouts still waiting for discovery hear that their
    /// revocation did not happen.
    func abandonRevocationsAwaitingDiscovery() {
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
        sendToIdP(unsigned, for: tokens) { [self] result, request in
            if stopping {
                // Cancelled (or answered as the loop stops): nobody learns more than this.
                completion?(.revocationFailed("the relay stopped before the IdP answered the revocation"))
                return
            }
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
