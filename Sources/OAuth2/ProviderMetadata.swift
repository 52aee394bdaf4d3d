import Endpoints
import JSON

/// What an identity provider publishes about itself (OpenID Connect Discovery 1.0, RFC 8414):
/// its endpoints and what it supports, read from `{issuer}/.well-known/openid-configuration`
/// or, failing that, `/.well-known/oauth-authorization-server{issuer path}`.
///
/// The relay trusts a document only for the issuer it was configured with: the document's
/// `issuer` must be that very string, and its endpoints must be https (plain http only on a
/// loopback host, or with `allowInsecureTokenUrl`, as for a configured `tokenUrl`). Fetching
/// is the caller's (see `ProviderDiscovery`); this type only reads.
public struct ProviderMetadata: Sendable, Equatable {
    public let issuer: String
    public let tokenEndpoint: HTTPURL
    public let authorizationEndpoint: HTTPURL?
    public let deviceAuthorizationEndpoint: HTTPURL?
    public let jwksUri: HTTPURL?
    public let revocationEndpoint: HTTPURL?
    /// RFC 7662's endpoint (RFC 8414 §2 `introspection_endpoint`): where a route's inbound check
    /// asks about callers' opaque tokens.
    public let introspectionEndpoint: HTTPURL?
    /// Empty when not published (many IdPs support S256 without saying so).
    public let codeChallengeMethodsSupported: [String]
    public let idTokenSigningAlgValuesSupported: [String]
    /// RFC 9449 §5.1; nil when the IdP does not publish it (no DPoP).
    public let dpopSigningAlgValuesSupported: [String]?
    /// RFC 9207: the IdP sends `iss` with every authorization response, so one without it is
    /// refused (`AuthorizationCallback.parse(query:issuer:issuerRequired:)`).
    public let authorizationResponseIssParameterSupported: Bool
    /// RFC 7591's endpoint (RFC 8414 §2 `registration_endpoint`): where an `auto` identity
    /// registers its client. Read as any URL; `AutoResolution` refuses plain http to a host that
    /// is not loopback (an identity that does not register never fails for it).
    public let registrationEndpoint: HTTPURL?
    /// RFC 8414 §2 (empty when not published).
    public let tokenEndpointAuthMethodsSupported: [String]
    public let scopesSupported: [String]
    public let grantTypesSupported: [String]

    public init(issuer: String, tokenEndpoint: HTTPURL, authorizationEndpoint: HTTPURL? = nil,
                deviceAuthorizationEndpoint: HTTPURL? = nil, jwksUri: HTTPURL? = nil, revocationEndpoint: HTTPURL? = nil,
                codeChallengeMethodsSupported: [String] = [], idTokenSigningAlgValuesSupported: [String] = [],
                dpopSigningAlgValuesSupported: [String]? = nil, authorizationResponseIssParameterSupported: Bool = false,
                introspectionEndpoint: HTTPURL? = nil, registrationEndpoint: HTTPURL? = nil,
                tokenEndpointAuthMethodsSupported: [String] = [], scopesSupported: [String] = [], grantTypesSupported: [String] = []) {
        self.issuer = issuer
        self.tokenEndpoint = tokenEndpoint
        self.authorizationEndpoint = authorizationEndpoint
        self.deviceAuthorizationEndpoint = deviceAuthorizationEndpoint
        self.jwksUri = jwksUri
        self.revocationEndpoint = revocationEndpoint
        self.introspectionEndpoint = introspectionEndpoint
        self.codeChallengeMethodsSupported = codeChallengeMethodsSupported
        self.idTokenSigningAlgValuesSupported = idTokenSigningAlgValuesSupported
        self.dpopSigningAlgValuesSupported = dpopSigningAlgValuesSupported
        self.authorizationResponseIssParameterSupported = authorizationResponseIssParameterSupported
        self.registrationEndpoint = registrationEndpoint
        self.tokenEndpointAuthMethodsSupported = tokenEndpointAuthMethodsSupported
        self.scopesSupported = scopesSupported
        self.grantTypesSupported = grantTypesSupported
    }

    /// The document URLs to try for `issuer`, in order: the OpenID Connect one (the issuer with
    /// `/.well-known/openid-configuration` appended), then RFC 8414 §3.1's (the well-known path
    /// inserted between the host and the issuer's path).
    public static func documentURLs(issuer: String, allowInsecureHTTP: Bool = false) throws(DiscoveryError) -> [HTTPURL] {
        let url: HTTPURL
        do throws(HTTPURLSyntaxError) {
            url = try HTTPURL(absolute: issuer, allowsQuery: false)
        } catch {
            throw .invalidIssuer(issuer: issuer, reason: error.message)
        }
        guard url.scheme == .https || allowInsecureHTTP || HostSyntax.isLoopback(url.host) else {
            throw .invalidIssuer(issuer: issuer, reason: "it is plain http:// to a host that is not loopback; use https://, "
                                 + "or set \"allowInsecureTokenUrl\": true to accept the risk")
        }
        let path = url.path.hasSuffix("/") ? String(url.path.dropLast()) : url.path
        var openID = url
        openID.path = path + "/.well-known/openid-configuration"
        var oauth = url
        oauth.path = "/.well-known/oauth-authorization-server" + path
        return [openID, oauth]
    }

    /// Reads the answer `reply` to a request for the document at `url` (`unixTime`, the
    /// wall-clock time, reads an HTTP-date `Retry-After`). Throws `.noDocument` (with one
    /// answer) when `url` serves no metadata document, so the caller can try the next URL.
    public static func parse(_ reply: TokenEndpointReply, from url: HTTPURL, issuer: String, allowInsecureHTTP: Bool = false,
                             unixTime: Double) throws(DiscoveryError) -> ProviderMetadata {
        switch DocumentAnswer(reply, from: url, unixTime: unixTime) {
        case .document(let members):
            return try ProviderMetadata(members: members, from: url.description, issuer: issuer, allowInsecureHTTP: allowInsecureHTTP)
        case .notHere(let answer):
            throw .noDocument(issuer: issuer, answers: [answer])
        case .failed(let error):
            throw error
        }
    }

    init(members: [String: JSONValue], from url: String, issuer: String, allowInsecureHTTP: Bool) throws(DiscoveryError) {
        let reader = MemberReader(members: members, url: url, allowInsecureHTTP: allowInsecureHTTP)
        guard let found = try reader.string("issuer") else { throw .invalidDocument(url: url, reason: "it has no issuer") }
        guard found == issuer else {
            throw .issuerMismatch(url: url, expected: issuer, found: ErrorText.clean(found, removing: []))
        }
        guard let tokenEndpoint = try reader.endpoint("token_endpoint") else {
            throw .invalidDocument(url: url, reason: "it has no token_endpoint")
        }
        self.init(issuer: found, tokenEndpoint: tokenEndpoint,
                  authorizationEndpoint: try reader.endpoint("authorization_endpoint"),
                  deviceAuthorizationEndpoint: try reader.endpoint("device_authorization_endpoint"),
                  jwksUri: try reader.endpoint("jwks_uri"),
                  revocationEndpoint: try reader.endpoint("revocation_endpoint"),
                  codeChallengeMethodsSupported: try reader.strings("code_challenge_methods_supported") ?? [],
                  idTokenSigningAlgValuesSupported: try reader.strings("id_token_signing_alg_values_supported") ?? [],
                  dpopSigningAlgValuesSupported: try reader.strings("dpop_signing_alg_values_supported"),
                  authorizationResponseIssParameterSupported: try reader.flag("authorization_response_iss_parameter_supported"),
                  introspectionEndpoint: try reader.endpoint("introspection_endpoint"),
                  registrationEndpoint: try reader.absoluteURL("registration_endpoint"),
                  tokenEndpointAuthMethodsSupported: try reader.strings("token_endpoint_auth_methods_supported") ?? [],
                  scopesSupported: try reader.strings("scopes_supported") ?? [],
                  grantTypesSupported: try reader.strings("grant_types_supported") ?? [])
    }
}

/// Typed access to a metadata document's members; a member of the wrong type is an error
/// naming it, an absent one is nil.
private struct MemberReader {
    let members: [String: JSONValue]
    let url: String
    let allowInsecureHTTP: Bool

    func string(_ name: String) throws(DiscoveryError) -> String? {
        guard let value = members[name], value != .null else { return nil }
        guard let text = value.string else { throw .invalidDocument(url: url, reason: "\(name) is not a string") }
        return text
    }

    func strings(_ name: String) throws(DiscoveryError) -> [String]? {
        guard let value = members[name], value != .null else { return nil }
        guard let texts = value.strings else { throw .invalidDocument(url: url, reason: "\(name) is not an array of strings") }
        return texts
    }

    func flag(_ name: String) throws(DiscoveryError) -> Bool {
        guard let value = members[name], value != .null else { return false }
        guard let flag = value.bool else { throw .invalidDocument(url: url, reason: "\(name) is not true or false") }
        return flag
    }

    /// An absolute http(s) URL, whatever its scheme.
    func absoluteURL(_ name: String) throws(DiscoveryError) -> HTTPURL? {
        guard let text = try string(name) else { return nil }
        do throws(HTTPURLSyntaxError) {
            return try HTTPURL(absolute: text)
        } catch {
            throw .invalidDocument(url: url, reason: "\(name) is not an absolute http(s) URL: \(ErrorText.clean(error.message, removing: []))")
        }
    }

    /// An endpoint: an absolute URL, https unless its host is loopback or insecure http is allowed.
    func endpoint(_ name: String) throws(DiscoveryError) -> HTTPURL? {
        guard let endpoint = try absoluteURL(name) else { return nil }
        guard endpoint.scheme == .https || allowInsecureHTTP || HostSyntax.isLoopback(endpoint.host) else {
            throw .invalidDocument(url: url, reason: "\(name) \(redactedURL(endpoint)) is plain http:// to a host that is not loopback")
        }
        return endpoint
    }
}

/// What one answer to a discovery request is.
enum DocumentAnswer {
    /// A JSON object: the document.
    case document([String: JSONValue])
    /// No document at this URL (404 and other 4xx, a 200 that is not JSON such as a web app's
    /// catch-all page): the next URL may have it. The text says what came instead.
    case notHere(String)
    case failed(DiscoveryError)

    init(_ reply: TokenEndpointReply, from url: HTTPURL, unixTime: Double) {
        let status = reply.status
        let what = "\(url) answered HTTP \(status) (\(reply.mediaType ?? "no content type"), \(reply.body.count) bytes)"
        if status >= 500 || status == 429 || status == 408 {
            let retryAfter = reply.header("Retry-After").flatMap { RetryAfter.seconds($0, unixTime: unixTime) }
            self = .failed(.unavailable(url: url.description, reason: "it answered HTTP \(status)", retryAfter: retryAfter))
        } else if (300..<400).contains(status) {
            let location = reply.header("Location").map { " to " + ErrorText.location($0, removing: []) } ?? ""
            self = .notHere("\(what), a redirect\(location), which is not followed")
        } else if !(200..<300).contains(status) {
            self = .notHere(what)
        } else if let members = (try? JSONValue(parsing: reply.body))?.dictionary {
            self = .document(members)
        } else {
            self = .notHere("\(what), not a JSON object")
        }
    }
}
