import OAuth2
import SafeText

/// What an identity's lifecycle holds, as a token store keeps it: the access token, the refresh
/// token and who logged in. Taken whole from the lifecycle (`init(_:)`), so that no write to the
/// file store or the shared one can forget a part (a write without the subject erased who
/// logged in).
struct HeldTokens {
    var token: AccessToken?
    var refreshToken: Secret?
    /// Who logged in, for an interactive identity.
    var subject: String?

    init(token: AccessToken? = nil, refreshToken: Secret? = nil, subject: String? = nil) {
        self.token = token
        self.refreshToken = refreshToken
        self.subject = subject
    }

    init(_ lifecycle: TokenLifecycle) {
        self.init(token: lifecycle.token, refreshToken: lifecycle.heldRefreshToken, subject: lifecycle.loggedInAs)
    }
}
