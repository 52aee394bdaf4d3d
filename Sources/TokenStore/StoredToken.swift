import OAuth2
import SafeText

/// What the token store keeps for one identity: its latest access token with the wall-clock
/// times it was requested and expires, and its refresh token. Times are Unix seconds, since an
/// entry outlives the process (and the monotonic clock) that wrote it.
///
/// Descriptions show no token: both are `Secret`s.
public struct StoredToken: Sendable, Equatable {
    public struct Access: Sendable, Equatable {
        public var value: Secret
        /// `Bearer`, normalized.
        public var type: String
        /// When the request that obtained it was sent (Unix seconds).
        public var issuedAt: Double
        public var expiresAt: Double
        public var scope: String?

        public init(value: Secret, type: String, issuedAt: Double, expiresAt: Double, scope: String?) {
            self.value = value
            self.type = type
            self.issuedAt = issuedAt
            self.expiresAt = expiresAt
            self.scope = scope
        }
    }

    /// Nil when only a refresh token is worth keeping (the access token expired or was dropped).
    public var access: Access?
    public var refreshToken: Secret?
    /// The subject of the ID token, to show who is logged in for an interactive identity.
    public var subject: String?

    public init(access: Access?, refreshToken: Secret?, subject: String? = nil) {
        self.access = access
        self.refreshToken = refreshToken
        self.subject = subject
    }

    /// True when there is nothing worth writing.
    public var isEmpty: Bool { access == nil && refreshToken == nil }
}
