// How a logout went, as its caller hears it (TokenService.forget, Logouts.swift).

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
