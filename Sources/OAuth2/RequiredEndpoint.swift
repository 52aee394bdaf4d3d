import Endpoints

/// An IdP endpoint an identity cannot work without, named as the configuration and as a
/// discovery document name it. Which ones an identity needs is decided here, once: for the
/// configuration's own check (`Identity.missingEndpoints`: discover or not) and for what
/// discovery found (`IdentityEndpoints(identity:metadata:documentURL:)`): an identity whose
/// metadata lacks one is `failing`, naming the member, rather than waiting for a page that never
/// comes or, worse, taking an ID token it cannot check.
public enum RequiredEndpoint: Sendable, Equatable, CaseIterable {
    /// Every grant: where tokens come from.
    case token
    /// A browser login (authorization_code): where the person is sent to log in.
    case authorization
    /// A device login (device_code): where the code a person enters comes from.
    case deviceAuthorization
    /// A browser login whose scope has `openid`: the keys its ID token is checked with.
    case jwks

    /// The identity's key that configures it.
    public var configKey: String {
        switch self {
        case .token: "tokenUrl"
        case .authorization: "authorizationUrl"
        case .deviceAuthorization: "deviceAuthorizationUrl"
        case .jwks: "jwksUrl"
        }
    }

    /// The member of a discovery document (OpenID Connect Discovery, RFC 8414, RFC 8628) that
    /// names it.
    public var metadataMember: String {
        switch self {
        case .token: "token_endpoint"
        case .authorization: "authorization_endpoint"
        case .deviceAuthorization: "device_authorization_endpoint"
        case .jwks: "jwks_uri"
        }
    }

    /// What it is needed for, to end "… which X needs".
    public var neededFor: String {
        switch self {
        case .token: "every grant"
        case .authorization: "the authorization_code grant"
        case .deviceAuthorization: "the device_code grant"
        case .jwks: "checking the ID token that a scope with \"openid\" asks for"
        }
    }

    /// The endpoint in `endpoints`, if there.
    func url(in endpoints: IdentityEndpoints) -> HTTPURL? {
        switch self {
        case .token: endpoints.token
        case .authorization: endpoints.authorization
        case .deviceAuthorization: endpoints.deviceAuthorization
        case .jwks: endpoints.jwks
        }
    }

    /// The endpoint as the identity configures it, if it does.
    func url(configuredIn identity: Identity) -> HTTPURL? {
        switch self {
        case .token: identity.tokenUrl
        case .authorization: identity.authorizationUrl
        case .deviceAuthorization: identity.deviceAuthorizationUrl
        case .jwks: identity.jwksUrl
        }
    }
}

extension Identity {
    /// The endpoints the identity's grant and scope need: the token endpoint always, the
    /// authorization endpoint for a browser login (and the JWKS when its scope asks for an ID
    /// token, which the relay then checks), the device authorization endpoint for a device
    /// login. (A device login's ID token, like any other grant's, is never read, so it needs no
    /// JWKS.)
    public var requiredEndpoints: [RequiredEndpoint] {
        switch grant {
        case .authorizationCode: requestsIDToken ? [.token, .authorization, .jwks] : [.token, .authorization]
        case .deviceCode: [.token, .deviceAuthorization]
        default: [.token]
        }
    }
}

extension IdentityEndpoints {
    /// The identity's endpoints from discovery: each configured one, else the one `metadata`
    /// (the document at `documentURL`) names. Throws `missingEndpoints` naming every member the
    /// identity needs that neither the configuration nor the document supplies.
    public init(identity: Identity, metadata: ProviderMetadata, documentURL: String) throws(DiscoveryError) {
        self.init(identity: identity, metadata: metadata)
        let missing = identity.requiredEndpoints.filter { $0.url(in: self) == nil }
        guard missing.isEmpty else { throw .missingEndpoints(url: documentURL, missing) }
    }
}
