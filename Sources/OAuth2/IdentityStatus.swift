/// One identity's state for the admin `/identities` view and `/readyz`: never a token.
public struct IdentityStatus: Sendable, Equatable, CustomStringConvertible {
    public enum State: String, Sendable, Equatable {
        /// A valid token, nothing failing.
        case valid
        /// A fetch in flight, nothing failing.
        case refreshing
        /// The last token request failed; the relay is backing off (a still-valid token is
        /// still used).
        case failing
        /// Interactive grant: a person must log in.
        case needsLogin = "needs-login"
        /// Interactive grant: a login is under way (a device code waits for the person, or a
        /// browser login's code is being exchanged).
        case loginPending = "login-pending"
        /// No token yet (or it expired or was invalidated), a fetch is due.
        case pending
        /// A grant on behalf of the caller: no token of its own, one per caller
        /// (`subjectTokenFrom`/`assertionFrom: "caller"`).
        case perCaller = "per-caller"
        /// An `auto` identity is learning its authorization server and client.
        case resolving
        /// An `auto` identity could not learn them, and only configuration can help.
        case needsConfiguration = "needs-configuration"
    }

    public var identity: String
    public var state: State
    /// True while a token is valid (what `/readyz` asks).
    public var hasValidToken: Bool
    /// The current token's times, in the lifecycle's clock, and its remaining lifetime.
    public var expiresAt: Double?
    public var expiresInSeconds: Double?
    public var refreshAt: Double?
    public var tokenType: String?
    public var scope: String?
    public var hasRefreshToken: Bool
    /// When the next fetch is due, in the lifecycle's clock; nil while one is in flight or a
    /// login is needed.
    public var nextFetchAt: Double?
    public var consecutiveFailures: Int
    /// The last failure's code (`invalid_client`, `http_503`, `timeout`, …) and description.
    public var lastErrorCode: String?
    public var lastErrorDescription: String?
    /// Interactive identities: who is logged in (from the ID token), the device login under
    /// way, and why the last login failed.
    public var loggedInAs: String?
    public var deviceLogin: DevicePrompt?
    public var lastLoginFailure: String?
    /// An `auto` identity: what it learnt and from where (nil before, and for other identities).
    public var auto: AutoFacts?
    /// A step-up login the upstream asked for and that is pending (nil: none).
    public var pendingStepUp: StepUp?

    public var description: String {
        var text = "\(identity): \(state.rawValue)"
        if let expiresInSeconds { text += ", expires in \(SecondsText.format(expiresInSeconds)) s" }
        if consecutiveFailures > 0 { text += ", \(consecutiveFailures) failures" }
        if let lastErrorCode { text += ", last error \(lastErrorCode)" }
        return text
    }
}
