import SafeText
import Endpoints

/// The RFC 7591 §2 registration request the relay sends for an `auto` identity, as values: the
/// token thread POSTs `body` as `application/json` to the registration endpoint, with
/// `Authorization: Bearer <initial access token>` when one is configured.
public struct ClientRegistrationRequest: Sendable, Equatable {
    public var endpoint: HTTPURL
    public var clientName: String
    /// The relay's login callback (browser login); empty for a device login.
    public var redirectURIs: [String]
    /// `authorization_code` + `refresh_token`, or the device grant's URN + `refresh_token`.
    public var grantTypes: [String]
    /// `["code"]` for a browser login, empty for a device login.
    public var responseTypes: [String]
    /// `none`, `client_secret_basic` or `private_key_jwt`.
    public var tokenEndpointAuthMethod: String
    public var scope: String?
    /// For `private_key_jwt`: the public JWK set of the generated key (`jwks`), as JSON text.
    public var jwks: String?
    public var initialAccessToken: Secret?
    /// An initial access token is configured but not sent: the issuer is not listed in
    /// `auto.allowedIssuers` (a refusal then says so).
    public var initialAccessTokenWithheld: Bool

    public init(endpoint: HTTPURL, clientName: String, redirectURIs: [String], grantTypes: [String], responseTypes: [String],
                tokenEndpointAuthMethod: String, scope: String? = nil, jwks: String? = nil, initialAccessToken: Secret? = nil,
                initialAccessTokenWithheld: Bool = false) {
        self.endpoint = endpoint
        self.clientName = clientName
        self.redirectURIs = redirectURIs
        self.grantTypes = grantTypes
        self.responseTypes = responseTypes
        self.tokenEndpointAuthMethod = tokenEndpointAuthMethod
        self.scope = scope
        self.jwks = jwks
        self.initialAccessToken = initialAccessToken
        self.initialAccessTokenWithheld = initialAccessTokenWithheld
    }
}

/// A client the relay registered (RFC 7591 §3.2.1), as it keeps it in the token store. Never
/// described with its secrets.
public struct RegisteredClient: Sendable, Equatable {
    /// The issuer it was registered at.
    public var issuer: String
    public var clientId: String
    public var clientSecret: Secret?
    /// Unix time; nil or 0: does not expire.
    public var clientSecretExpiresAt: Double?
    /// RFC 7592: what reads, updates and deletes the registration.
    public var registrationAccessToken: Secret?
    public var registrationClientUri: HTTPURL?
    /// The method registered (the server's answer wins over the request's).
    public var tokenEndpointAuthMethod: String
    /// For `private_key_jwt`: the generated key, PKCS#8 PEM.
    public var privateKeyPEM: Secret?
    /// The redirect URI registered (nil for a device login).
    public var redirectUri: String?
    /// Unix time of the registration.
    public var registeredAt: Double
    /// The scope a successful step-up login made the identity's (nil: none): kept with the
    /// registration, so that the identity asks for it again after a restart (or on another
    /// replica) and finds the login kept for it (its settings fingerprint includes the scope).
    public var learntScope: String?

    public init(issuer: String, clientId: String, clientSecret: Secret? = nil, clientSecretExpiresAt: Double? = nil,
                registrationAccessToken: Secret? = nil, registrationClientUri: HTTPURL? = nil, tokenEndpointAuthMethod: String,
                privateKeyPEM: Secret? = nil, redirectUri: String? = nil, registeredAt: Double, learntScope: String? = nil) {
        self.issuer = issuer
        self.clientId = clientId
        self.clientSecret = clientSecret
        self.clientSecretExpiresAt = clientSecretExpiresAt
        self.registrationAccessToken = registrationAccessToken
        self.registrationClientUri = registrationClientUri
        self.tokenEndpointAuthMethod = tokenEndpointAuthMethod
        self.privateKeyPEM = privateKeyPEM
        self.redirectUri = redirectUri
        self.registeredAt = registeredAt
        self.learntScope = learntScope
    }
}

/// Which registration an `auto` identity may reuse: one made by the same relay identity at the
/// same issuer, for the same callback and client authentication. The store keeps one per key.
public struct RegistrationKey: Sendable, Equatable, Hashable {
    /// The identity's name (`auto-…`): the store entry is named after it.
    public var identity: String
    public var issuer: String
    public var redirectUri: String?
    public var clientAuth: AutoClientAuth

    public init(identity: String, issuer: String, redirectUri: String?, clientAuth: AutoClientAuth) {
        self.identity = identity
        self.issuer = issuer
        self.redirectUri = redirectUri
        self.clientAuth = clientAuth
    }
}
