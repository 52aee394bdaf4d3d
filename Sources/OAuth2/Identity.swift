import Endpoints

/// An OAuth2 client identity: how to get access tokens from a token endpoint. What a grant or
/// a client authentication needs travels in its case (`Grant`, `ClientAuth`), so an identity
/// cannot hold a password without the password grant, or a secret without a way to send it.
/// Config decodes identities from JSON; this module owns their meaning.
public struct Identity: Sendable, Equatable {
    /// The key in `identities`.
    public var name: String
    /// The token endpoint as configured; nil when discovery (`issuer`) gives it. For a GitHub App,
    /// its installation's access-token URL under `githubApiUrl`.
    public var tokenUrl: HTTPURL?
    /// Where a person logs in (authorization code grant); nil: from discovery.
    public var authorizationUrl: HTTPURL?
    /// RFC 8628 device authorization endpoint; nil: from discovery.
    public var deviceAuthorizationUrl: HTTPURL?
    /// The IdP's JWKS, to verify ID tokens; nil: from discovery.
    public var jwksUrl: HTTPURL?
    /// RFC 7009 revocation endpoint, used on logout; nil: from discovery (or none).
    public var revocationUrl: HTTPURL?
    public var grant: Grant
    /// How the client identifies itself to the token endpoint.
    public var clientAuth: ClientAuth
    /// The IdP's issuer identifier; a client assertion's `aud` when `clientAssertionAudience`
    /// says so.
    public var issuer: String?
    /// What the `aud` of a client assertion (private_key_jwt, client_secret_jwt) names.
    public var clientAssertionAudience: ClientAssertionAudience = .tokenEndpoint
    /// Whether `client_id` goes in the form beside a client assertion. RFC 7521 §4.2 makes it
    /// optional; Microsoft Entra ID requires it, and Glewlwyd needs it with DPoP, so it is sent
    /// unless an IdP refuses it.
    public var sendClientIdWithAssertion = true
    /// Space-separated scopes (the config may also give an array).
    public var scope: String?
    public var audience: String?
    /// RFC 8707 resource indicators, each an absolute URI.
    public var resource: [String]
    /// Extra form fields of the token request (the fields of an extension grant).
    public var params: [String: String]
    /// Extra headers of the token request.
    public var headers: [String: String]
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
    public var responseFields = ResponseFields.standard
    /// Extra query parameters of the authorization request (authorization code grant): what an
    /// IdP needs beyond the standard ones, such as Google's `access_type=offline`. Never one the
    /// relay sets itself (`AuthorizationRequest` lists them).
    public var authorizationParams: [String: String] = [:]
    /// The authorization code grant's redirect URI: a URL on one of the relay's own listeners,
    /// where the relay serves the callback.
    public var redirectUri: HTTPURL?
    /// How long a started login (its `state`, or a device code's polling) may take.
    public var loginTimeoutSeconds: Double = 600
    /// An interactive identity's token is a person's: its routes are refused on a listener
    /// that is not loopback unless this says the operator means it.
    public var allowRemoteUse = false
    /// DPoP (RFC 9449): token requests carry a proof of this key, and `DPoP` tokens go upstream
    /// with a fresh proof per request. Nil: no proofs, and a `DPoP` token is refused.
    public var dpop: DPoPBinding?
    /// The files its credentials were read from, which the token thread reads again when they
    /// change (a rotated Kubernetes Secret or projected token): `withCredential` takes a new
    /// content, `TokenRequest.rebuilt` makes a request with it.
    public var credentialFiles: [CredentialFile] = []
    /// For a grant on behalf of the caller (`Grant.caller`): how many callers' tokens are kept
    /// at most (a bounded LRU; `maxCallers`).
    public var maxCallers = Identity.defaultMaxCallers
    /// An identity made for a route with `"identity": "auto"`: what it learns by itself starts
    /// from here (`AutoResolution`). Its grant is `authorization_code` or `device_code`, and its
    /// issuer, client and scope stay unset until `TokenLifecycle.resolved` fills them in.
    public var auto: AutoSettings?

    /// `maxCallers` when the config does not set it.
    public static let defaultMaxCallers = 10_000

    public init(name: String, tokenUrl: HTTPURL?, grant: Grant = .clientCredentials, clientAuth: ClientAuth = .unidentified,
                scope: String? = nil, audience: String? = nil, resource: [String] = [], params: [String: String] = [:],
                headers: [String: String] = [:], tls: TLSSettings? = nil) {
        self.name = name
        self.tokenUrl = tokenUrl
        self.grant = grant
        self.clientAuth = clientAuth
        self.scope = scope
        self.audience = audience
        self.resource = resource
        self.params = params
        self.headers = headers
        self.tls = tls
    }
}
