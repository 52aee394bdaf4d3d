import Endpoints

/// The IdP endpoints an identity uses, once known: what the configuration names, completed by
/// discovery (`issuer`) where it names nothing. An explicit URL always wins over a discovered
/// one, so a deployment can route one endpoint through a gateway.
public struct IdentityEndpoints: Sendable, Equatable {
    public var token: HTTPURL
    public var authorization: HTTPURL?
    public var deviceAuthorization: HTTPURL?
    public var jwks: HTTPURL?
    public var revocation: HTTPURL?
    /// What the IdP's metadata says of its ID tokens' algorithms (empty: not said).
    public var idTokenAlgorithms: [String] = []
    /// The IdP puts `iss` in its login callbacks (RFC 9207): a callback without it is refused.
    public var issuerInCallback = false

    public init(token: HTTPURL, authorization: HTTPURL? = nil, deviceAuthorization: HTTPURL? = nil,
                jwks: HTTPURL? = nil, revocation: HTTPURL? = nil) {
        self.token = token
        self.authorization = authorization
        self.deviceAuthorization = deviceAuthorization
        self.jwks = jwks
        self.revocation = revocation
    }

    /// The identity's endpoints: each configured one, else the one `metadata` names, whether
    /// or not that is all the identity needs (the public initializer in RequiredEndpoint.swift
    /// checks that).
    init(identity: Identity, metadata: ProviderMetadata) {
        self.init(token: identity.tokenUrl ?? metadata.tokenEndpoint,
                  authorization: identity.authorizationUrl ?? metadata.authorizationEndpoint,
                  deviceAuthorization: identity.deviceAuthorizationUrl ?? metadata.deviceAuthorizationEndpoint,
                  jwks: identity.jwksUrl ?? metadata.jwksUri, revocation: identity.revocationUrl ?? metadata.revocationEndpoint)
        idTokenAlgorithms = metadata.idTokenSigningAlgValuesSupported
        issuerInCallback = metadata.authorizationResponseIssParameterSupported
    }
}

extension Identity {
    /// The keys of the endpoints the identity needs (`requiredEndpoints`) that its
    /// configuration does not name.
    public var missingEndpoints: [String] {
        requiredEndpoints.filter { $0.url(configuredIn: self) == nil }.map(\.configKey)
    }

    /// Discovery is needed when an endpoint the grant needs is not configured and an `issuer`
    /// can supply it. (An `issuer` with every endpoint given is used only as a client
    /// assertion's audience and to check ID tokens; without an `issuer` the configuration must
    /// name every endpoint, which Config enforces.)
    public var needsDiscovery: Bool { issuer != nil && !missingEndpoints.isEmpty }

    /// The scope asks for OpenID Connect: the login sends a `nonce` and checks the ID token.
    public var requestsIDToken: Bool {
        scope?.split(separator: " ").contains("openid") ?? false
    }

    /// True when a request to the IdP may use TLS: an endpoint configured as https, or one
    /// discovery may give (an issuer that is not plain http), or an `auto` identity's learnt one.
    public var mayUseHTTPS: Bool {
        let configured = [tokenUrl, authorizationUrl, deviceAuthorizationUrl, jwksUrl, revocationUrl].compactMap { $0 }
        return configured.contains { $0.scheme == .https } || (issuer.map { !$0.lowercased().hasPrefix("http:") } ?? false)
            || auto != nil
    }

    /// The endpoints as configured, when they are all the grant needs.
    public var configuredEndpoints: IdentityEndpoints? {
        guard !needsDiscovery, let tokenUrl else { return nil }
        return IdentityEndpoints(token: tokenUrl, authorization: authorizationUrl, deviceAuthorization: deviceAuthorizationUrl,
                                 jwks: jwksUrl, revocation: revocationUrl)
    }
}
