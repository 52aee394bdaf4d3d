import SafeText
import Endpoints

/// What an identity made for a route with `"identity": "auto"` starts from: the route's
/// upstream and the configuration's `auto` object. Everything else (the authorization server,
/// the client, the scope, the endpoints) it learns by itself (`AutoResolution`): RFC 9728
/// protected resource metadata, RFC 8414 discovery, RFC 7591 registration.
public struct AutoSettings: Sendable, Equatable {
    /// The protected resource: the route's upstream URL. The metadata's `resource` must equal it
    /// (RFC 9728 §3.3), and the RFC 8707 `resource` of the login and token requests is the
    /// metadata's `resource` as written.
    public var resource: HTTPURL
    /// The authorization servers (issuer identifiers) it may use, in the order preferred: the
    /// first of the resource's `authorization_servers` that is listed. Empty: any https issuer
    /// (Config allows that only when every listener is loopback).
    public var allowedIssuers: [String]
    /// `client_name` of the registration.
    public var clientName: String
    /// How the registered client authenticates at the token endpoint.
    public var clientAuth: AutoClientAuth
    /// RFC 7591 §3: the initial access token some servers require for registration.
    public var initialAccessToken: Secret?
    /// The scope asked for when the configuration sets one; else the challenge's `scope`, else
    /// the metadata's `scopes_supported`.
    public var scope: String?
    /// TLS settings for requests to the resource (its metadata, its challenge): the route's `tls`.
    public var resourceTLS: TLSSettings?

    public init(resource: HTTPURL, allowedIssuers: [String] = [], clientName: String = "oauth-relay",
                clientAuth: AutoClientAuth = .automatic, initialAccessToken: Secret? = nil, scope: String? = nil,
                resourceTLS: TLSSettings? = nil) {
        self.resource = resource
        self.allowedIssuers = allowedIssuers
        self.clientName = clientName
        self.clientAuth = clientAuth
        self.initialAccessToken = initialAccessToken
        self.scope = scope
        self.resourceTLS = resourceTLS
    }
}

/// `auto.clientAuth`: the `token_endpoint_auth_method` the relay registers.
public enum AutoClientAuth: String, Sendable, Equatable, CaseIterable {
    /// `none` with PKCE when the server lists it in `token_endpoint_auth_methods_supported`
    /// (or lists nothing); otherwise `client_secret_basic`.
    case automatic
    /// A public client (PKCE); refused when the server does not list `none`.
    case none
    case clientSecretBasic = "client_secret_basic"
    /// `private_key_jwt` with a P-256 key the relay generates, kept with the registration.
    case privateKeyJWT = "private_key_jwt"
}
