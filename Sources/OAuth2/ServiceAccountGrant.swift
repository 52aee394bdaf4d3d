/// A Google service account's way to its access tokens (`serviceAccountKeyFile`): its key, and
/// which of Google's two ways it goes, with what that way names.
///
/// - At the token endpoint (`tokenEndpoint`): the jwt-bearer grant of RFC 7523 §2.1 as Google
///   documents it ("Using OAuth 2.0 for Server to Server Applications", HTTP/REST): a JWT the key
///   signs, with `iss` = `client_email`, `scope`, `aud` = the token URL, `iat`, `exp` one hour on,
///   and `sub` = a user to act for under domain-wide delegation; no other client authentication.
/// - Without one (`selfSignedAudience`, `selfSignedScope`): Google's "service account
///   authorization without OAuth" (AIP-4111), where the JWT the key signs is the access token
///   itself: `iss` = `sub` = `client_email`, `aud` = the API (`https://SERVICE.googleapis.com/`)
///   or, for the APIs that accept it, a `scope` claim instead (never both), `iat`, and `exp`
///   exactly one hour on. No request goes anywhere (`selfSignedToken(issuedAt:unixTime:)`).
public struct ServiceAccountGrant: Sendable, Equatable, CustomStringConvertible {
    public enum Token: Sendable, Equatable {
        /// The jwt-bearer grant: `scope` (space-separated) in the assertion, and `subject` its
        /// `sub` for domain-wide delegation.
        case tokenEndpoint(scope: String, subject: String?)
        /// A self-signed JWT whose `aud` is this API.
        case selfSignedAudience(String)
        /// A self-signed JWT with this `scope` claim (space-separated) and no `aud`.
        case selfSignedScope(String)
    }

    public var key: ServiceAccountKey
    public var token: Token

    public init(key: ServiceAccountKey, token: Token) {
        self.key = key
        self.token = token
    }

    /// The relay signs the access token itself: no token endpoint is asked.
    public var isSelfSigned: Bool {
        if case .tokenEndpoint = token { return false }
        return true
    }

    public var description: String {
        switch token {
        case .tokenEndpoint(_, let subject):
            "\(key), jwt-bearer grant" + (subject.map { " for \($0)" } ?? "")
        case .selfSignedAudience, .selfSignedScope:
            "\(key), self-signed JWT"
        }
    }
}
