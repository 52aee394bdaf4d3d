/// The OAuth2 grant an identity uses, with what that grant sends. Credentials are `Secret`s,
/// so printing a grant shows none; `description` is the grant's name.
///
/// A new grant is a new case with its own payload (the authorization-code and device flows
/// will carry their redirect URI or polling state here), and `TokenRequest` and the lifecycle
/// switch over it, so the compiler lists every place that must learn about it.

import SafeText

public enum Grant: Sendable, Equatable, CustomStringConvertible {
    case clientCredentials
    /// RFC 6749 §4.3: the resource owner's credentials.
    case password(username: String, password: Secret)
    /// A refresh token given in the config, sent as this grant's own request.
    case refreshToken(Secret)
    /// Interactive: a browser login. `seed`, a refresh token from the config, stands in for a
    /// first login.
    case authorizationCode(seed: Secret?)
    /// Interactive: RFC 8628 device authorization, with an optional seed refresh token.
    case deviceCode(seed: Secret?)
    /// RFC 8693 token exchange. A part left nil comes from `params` (or is not sent: the actor).
    case tokenExchange(subject: ExchangedToken, actor: ExchangedToken)
    /// RFC 7523 JWT bearer; a nil assertion comes from `params`.
    case jwtBearer(assertion: Secret?)
    /// Any other grant named by an absolute URI, with the optional fields the config may give it
    /// (for a token-exchange or jwt-bearer URI too when it sets fields those grants do not use).
    /// Its other form fields come from `params`.
    case `extension`(uri: String, fields: ExtensionFields)
    /// Not OAuth: a GitHub App installation's access token, asked of GitHub's REST API with an
    /// App JWT (`GitHubAppInstallation`).
    case gitHubAppInstallation(GitHubAppInstallation)
    /// A Google service account (`serviceAccountKeyFile`): the jwt-bearer grant with an assertion
    /// its key signs for each request, or a self-signed JWT as the token (`ServiceAccountGrant`).
    case serviceAccount(ServiceAccountGrant)
    /// The caller's own token is the subject (`CallerGrant`): one token per caller, none of
    /// the identity's own.
    case caller(CallerGrant)

    /// The grant's name, without its values.
    public var type: GrantType {
        switch self {
        case .clientCredentials: .clientCredentials
        case .password: .password
        case .refreshToken: .refreshToken
        case .authorizationCode: .authorizationCode
        case .deviceCode: .deviceCode
        case .tokenExchange: .tokenExchange
        case .jwtBearer: .jwtBearer
        case .extension(let uri, _): .extension(uri)
        case .gitHubAppInstallation: .gitHubAppInstallation
        // A self-signed token is no grant at all; it is named for the JWT bearer it is.
        case .serviceAccount: .jwtBearer
        case .caller(let grant): grant.type
        }
    }

    /// The `grant_type` value sent to the token endpoint.
    public var grantType: String { type.grantType }

    /// True for grants that need a person (`authorization_code`, `device_code`).
    public var isInteractive: Bool { type.isInteractive }

    /// The refresh token an interactive identity starts with instead of a first login.
    public var interactiveSeed: Secret? {
        switch self {
        case .authorizationCode(let seed), .deviceCode(let seed): seed
        default: nil
        }
    }

    /// The service account, for a `serviceAccountKeyFile` identity.
    public var serviceAccount: ServiceAccountGrant? {
        if case .serviceAccount(let account) = self { account } else { nil }
    }

    /// The grant exchanges each caller's token, for that caller alone (nil: the identity's
    /// tokens are its own).
    public var callerGrant: CallerGrant? {
        if case .caller(let grant) = self { grant } else { nil }
    }

    /// The identity's own key signs its access tokens: no token endpoint is asked.
    public var isSelfSigned: Bool { serviceAccount?.isSelfSigned ?? false }

    /// The name as written in the config.
    public var description: String { type.description }
}
