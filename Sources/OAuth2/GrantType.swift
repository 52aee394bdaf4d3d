/// The name of an OAuth2 grant, as the config writes it and `grant_type` sends it, without the
/// values the grant needs (those are in `Grant`). Requests are described by it, so a
/// description never holds a credential.
public enum GrantType: Sendable, Equatable, Hashable, CustomStringConvertible {
    case clientCredentials
    case password
    case refreshToken
    /// Interactive: a browser login.
    case authorizationCode
    /// Interactive: RFC 8628 device authorization.
    case deviceCode
    /// Any other grant, named by an absolute URI (token exchange, jwt-bearer, …).
    case `extension`(String)
    /// A GitHub App installation token (`GitHubAppInstallation`): not an OAuth grant, so its name
    /// is never sent as a `grant_type`.
    case gitHubAppInstallation

    /// RFC 8693 token exchange.
    public static let tokenExchange = GrantType.extension("urn:ietf:params:oauth:grant-type:token-exchange")
    /// RFC 7523 JWT bearer assertion.
    public static let jwtBearer = GrantType.extension("urn:ietf:params:oauth:grant-type:jwt-bearer")

    /// The `grant_type` value sent to the token endpoint (for the GitHub App grant, which sends
    /// none, the name the config gives it).
    public var grantType: String {
        switch self {
        case .clientCredentials: "client_credentials"
        case .password: "password"
        case .refreshToken: "refresh_token"
        case .authorizationCode: "authorization_code"
        case .deviceCode: "urn:ietf:params:oauth:grant-type:device_code"
        case .extension(let uri): uri
        case .gitHubAppInstallation: "github_app_installation"
        }
    }

    /// True for grants that need a person (`authorization_code`, `device_code`).
    public var isInteractive: Bool {
        self == .authorizationCode || self == .deviceCode
    }

    /// True for grants named by a URI, whose form fields come from the identity's `params`.
    public var isExtension: Bool {
        if case .extension = self { return true }
        return false
    }

    /// The name as written in the config.
    public var description: String {
        switch self {
        case .deviceCode: "device_code"
        default: grantType
        }
    }
}
