import HTTPFields

/// An OAuth2 client identity: how to get access tokens from a token endpoint.
public struct Identity: Sendable, Equatable {
    /// The key in `identities`.
    public var name: String
    public var tokenUrl: HTTPURL
    public var grant: Grant
    public var clientId: String?
    public var clientSecret: Secret?
    public var clientAuth: ClientAuth
    /// Space-separated scopes (the config may also give an array).
    public var scope: String?
    public var audience: String?
    /// RFC 8707 resource indicators, each an absolute URI.
    public var resource: [String]
    /// Extra form fields of the token request (the fields of an extension grant).
    public var params: [String: String]
    /// Extra headers of the token request.
    public var headers: [String: String]
    public var username: String?
    public var password: Secret?
    /// The seed refresh token (`refresh_token` grant, or to skip a first interactive login).
    public var refreshToken: Secret?
    /// The `assertion` form field of an extension grant (for example jwt-bearer).
    public var assertion: Secret?
    /// TLS options for the token endpoint.
    public var tls: TLSSettings?
    /// Accept an `http://` token URL on a host that is not loopback (logged as a warning);
    /// loopback hosts may always use `http://`.
    public var allowInsecureTokenUrl: Bool = false
    /// The lifetime assumed for a token whose response has no `expires_in` and which is not a
    /// JWT with an `exp` claim.
    public var defaultExpiresInSeconds: Double = 3600
    /// The least time before expiry at which a token is refreshed.
    public var refreshSkewSeconds: Double = 10
    /// The names of the token response's fields, for IdPs that do not use the standard ones.
    public var responseFields = ResponseFields()
    /// RFC 8693 token exchange: the `subject_token` form field and its `subject_token_type`.
    public var subjectToken: Secret?
    public var subjectTokenType: String?
    /// RFC 8693 token exchange: the `actor_token` form field and its `actor_token_type`.
    public var actorToken: Secret?
    public var actorTokenType: String?

    public init(name: String, tokenUrl: HTTPURL, grant: Grant = .clientCredentials, clientId: String? = nil,
                clientSecret: Secret? = nil, clientAuth: ClientAuth? = nil, scope: String? = nil, audience: String? = nil,
                resource: [String] = [], params: [String: String] = [:], headers: [String: String] = [:],
                username: String? = nil, password: Secret? = nil, refreshToken: Secret? = nil, assertion: Secret? = nil,
                tls: TLSSettings? = nil) {
        self.name = name
        self.tokenUrl = tokenUrl
        self.grant = grant
        self.clientId = clientId
        self.clientSecret = clientSecret
        self.clientAuth = clientAuth ?? (clientSecret == nil ? .publicClient : .basic)
        self.scope = scope
        self.audience = audience
        self.resource = resource
        self.params = params
        self.headers = headers
        self.username = username
        self.password = password
        self.refreshToken = refreshToken
        self.assertion = assertion
        self.tls = tls
    }
}

/// The names of the fields of a token response that carry the token, its lifetime and its
/// type (`responseFields`); the standard names by default.
public struct ResponseFields: Sendable, Equatable, Hashable {
    public var token: String
    public var expiry: String
    public var type: String

    public init(token: String = "access_token", expiry: String = "expires_in", type: String = "token_type") {
        self.token = token
        self.expiry = expiry
        self.type = type
    }
}

/// The OAuth2 grant an identity uses.
public enum Grant: Sendable, Equatable, Hashable, CustomStringConvertible {
    case clientCredentials
    case password
    case refreshToken
    /// Interactive: a browser login.
    case authorizationCode
    /// Interactive: RFC 8628 device authorization.
    case deviceCode
    /// Any other grant, named by an absolute URI (token exchange, jwt-bearer, …), whose form
    /// fields come from `params`.
    case `extension`(String)

    /// The `grant_type` value sent to the token endpoint.
    public var grantType: String {
        switch self {
        case .clientCredentials: "client_credentials"
        case .password: "password"
        case .refreshToken: "refresh_token"
        case .authorizationCode: "authorization_code"
        case .deviceCode: "urn:ietf:params:oauth:grant-type:device_code"
        case .extension(let uri): uri
        }
    }

    /// True for grants that need a person (`authorization_code`, `device_code`).
    public var isInteractive: Bool {
        self == .authorizationCode || self == .deviceCode
    }

    /// The name as written in the config.
    public var description: String {
        switch self {
        case .deviceCode: "device_code"
        default: grantType
        }
    }

    /// RFC 8693 token exchange.
    public static let tokenExchange = Grant.extension("urn:ietf:params:oauth:grant-type:token-exchange")
    /// RFC 7523 JWT bearer assertion.
    public static let jwtBearer = Grant.extension("urn:ietf:params:oauth:grant-type:jwt-bearer")

    static let names = ["client_credentials", "password", "refresh_token", "authorization_code", "device_code"]

    static func parse(_ text: String) throws(InvalidValue) -> Grant {
        switch text {
        case "client_credentials": return .clientCredentials
        case "password": return .password
        case "refresh_token": return .refreshToken
        case "authorization_code": return .authorizationCode
        case "device_code", "urn:ietf:params:oauth:grant-type:device_code": return .deviceCode
        default:
            guard isAbsoluteURI(text) else {
                throw InvalidValue("unknown grant \"\(text)\"" + didYouMean(text, among: names)
                                   + "; expected one of \(names.joined(separator: ", ")) or an absolute URI")
            }
            return .extension(text)
        }
    }
}

/// True for `scheme:rest` with an RFC 3986 scheme, a non-empty rest and no spaces or control
/// characters: `urn:ietf:params:oauth:grant-type:jwt-bearer`, `https://api.example.com/`.
func isAbsoluteURI(_ text: String) -> Bool {
    guard let colon = text.firstIndex(of: ":"), colon != text.startIndex, text.index(after: colon) != text.endIndex else {
        return false
    }
    let scheme = text[..<colon].utf8
    return ASCII.isAlpha(scheme.first!)
        && scheme.allSatisfy { ASCII.isAlphanumeric($0) || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".") }
        && text.utf8.allSatisfy { $0 > 0x20 && $0 != 0x7F }
}

/// How the client authenticates to the token endpoint.
public enum ClientAuth: String, Sendable, Equatable, Hashable {
    /// client_secret_basic: HTTP Basic with client id and secret.
    case basic
    /// client_secret_post: `client_id` and `client_secret` in the form.
    case post
    /// `none`, a public client: `client_id` in the form, no secret. (Not named `none`, which
    /// would be mistaken for `Optional.none` where a `ClientAuth?` is expected.)
    case publicClient = "none"
}
