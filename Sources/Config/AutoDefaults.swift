import Endpoints
import OAuth2
import SafeText

/// The top-level `auto` object: what every identity made for a route with `"identity": "auto"`
/// starts from, besides its route's upstream. Every key is optional; `RelayConfig.auto` is nil
/// when the file has no `auto` object (these defaults then apply).
public struct AutoDefaults: Sendable, Equatable {
    /// `allowedIssuers`: the authorization servers the identities may use, in the order
    /// preferred; empty (the default) means any https issuer, which Config allows only when
    /// every listener is loopback.
    public var allowedIssuers: [String] = []
    /// `clientName`: the registration's `client_name`.
    public var clientName = "oauth-relay"
    /// `clientAuth`: how the registered client authenticates at the token endpoint.
    public var clientAuth = AutoClientAuth.automatic
    /// `initialAccessToken` or the content of `initialAccessTokenFile`.
    public var initialAccessToken: Secret?
    /// `initialAccessTokenFile`, read again by the token thread when it changes.
    public var initialAccessTokenFile: CredentialFile?
    /// `scope`: the scope asked for instead of the one the resource names.
    public var scope: String?
    /// `grant`: how the person logs in.
    public var grant = AutoGrant.authorizationCode
    /// `allowRemoteUse`: the identities' tokens may be offered on a listener other machines reach.
    public var allowRemoteUse = false
    /// `redirectUri`: the login callback (authorization code grant); nil: the default callback
    /// on the plain listener, as for any browser login.
    public var redirectUri: HTTPURL?
    /// `loginTimeoutSeconds`: how long a started login may take; nil: an identity's default.
    public var loginTimeoutSeconds: Double?

    public init() {}

    /// The identity named `name` for `upstream`, a route's upstream, asked with `tls` (the
    /// route's): a person's identity (`grant`) with no issuer, client or endpoints yet, which it
    /// learns from the upstream (`Identity.auto`). Its RFC 8707 resource is the upstream.
    public func identity(named name: String, for upstream: UpstreamURL, tls: TLSSettings?) -> Identity {
        let grant: Grant = switch self.grant {
        case .authorizationCode: .authorizationCode(seed: nil)
        case .deviceCode: .deviceCode(seed: nil)
        }
        var identity = Identity(name: name, tokenUrl: nil, grant: grant, clientAuth: .unidentified, scope: scope,
                                resource: [upstream.description])
        identity.redirectUri = redirectUri
        identity.loginTimeoutSeconds = loginTimeoutSeconds ?? identity.loginTimeoutSeconds
        identity.allowRemoteUse = allowRemoteUse
        identity.credentialFiles = initialAccessTokenFile.map { [$0] } ?? []
        let resource = HTTPURL(scheme: upstream.scheme, host: upstream.host, port: upstream.port,
                               path: upstream.basePath.isEmpty ? "/" : upstream.basePath)
        identity.auto = AutoSettings(resource: resource, allowedIssuers: allowedIssuers, clientName: clientName,
                                     clientAuth: clientAuth, initialAccessToken: initialAccessToken, scope: scope,
                                     resourceTLS: tls)
        return identity
    }
}

/// `auto.grant`: how a person logs in to an `auto` identity.
public enum AutoGrant: String, Sendable, Equatable, CaseIterable {
    /// A browser login (the default), with the redirect URI any browser identity gets.
    case authorizationCode = "authorization_code"
    /// A device login (RFC 8628): a code the person enters on another device.
    case deviceCode = "device_code"
}
