import Crypto
import Endpoints
import JOSE
import JSON
import SafeText

// The RFC 7591 registration an `auto` identity makes: which `token_endpoint_auth_method` it
// asks for (from what the server lists), the request's members for its grant, and its JSON body.

extension AutoClientAuth {
    /// The `token_endpoint_auth_method` to register, from what the server lists in
    /// `token_endpoint_auth_methods_supported` (`supported`; empty: it lists nothing, and any
    /// method is tried): `automatic` prefers `none` (a public client with PKCE), then
    /// `client_secret_basic`; the other choices are taken as they are, when listed.
    public func registeredMethod(supported: [String], issuer: String) throws(AutoSetupError) -> String {
        let wanted: [String] = switch self {
        case .automatic: ["none", "client_secret_basic"]
        case .none: ["none"]
        case .clientSecretBasic: ["client_secret_basic"]
        case .privateKeyJWT: ["private_key_jwt"]
        }
        guard let method = supported.isEmpty ? wanted.first : wanted.first(where: supported.contains) else {
            throw .noUsableAuthMethod(issuer: issuer, supported: supported.map { ErrorText.clean($0, removing: []) })
        }
        return method
    }
}

extension ClientRegistrationRequest {
    /// The registration of `identity` (an `auto` one, with its `redirectUri` for a browser login)
    /// at `endpoint` of the server `issuer`, with `method` and, for `private_key_jwt`, the public
    /// JWK set `jwks`. The initial access token goes only to an issuer `auto.allowedIssuers`
    /// lists: it is a credential for one server, not for any server a resource names.
    public init(identity: Identity, settings: AutoSettings, issuer: String, endpoint: HTTPURL, method: String, scope: String?,
                jwks: String?) {
        let browser = identity.grant.type == .authorizationCode
        let sendsToken = settings.allowedIssuers.contains(issuer)
        self.init(endpoint: endpoint, clientName: settings.clientName,
                  redirectURIs: browser ? identity.redirectUri.map { [$0.description] } ?? [] : [],
                  grantTypes: [identity.grant.grantType, GrantType.refreshToken.grantType],
                  responseTypes: browser ? ["code"] : [], tokenEndpointAuthMethod: method, scope: scope, jwks: jwks,
                  initialAccessToken: sendsToken ? settings.initialAccessToken : nil,
                  initialAccessTokenWithheld: !sendsToken && settings.initialAccessToken != nil)
    }

    /// The `scope` to register (RFC 7591 §2): the scope learnt (what the first login asks
    /// for), `auto.scope`, and every one of the resource's `scopes_supported`, each once, in that
    /// order; nil when all are empty. Servers that hold a client to its registered scope then
    /// allow the step-ups the resource may ask for later (RFC 6750 `insufficient_scope`).
    public static func registeredScope(learnt: String?, configured: String?, supported: [String]) -> String? {
        var scopes: [String] = []
        let words = [learnt, configured].compactMap { $0 }.flatMap { $0.split(separator: " ").map(String.init) } + supported
        for word in words where !scopes.contains(word) { scopes.append(word) }
        return scopes.isEmpty ? nil : scopes.joined(separator: " ")
    }

    /// The JSON document POSTed (RFC 7591 §2, §3.1): `client_name`, `grant_types`,
    /// `token_endpoint_auth_method`, and `redirect_uris`, `response_types`, `scope` and `jwks`
    /// when there are any (a device login's client has no redirect URI and no response type).
    public var body: [UInt8] {
        var members = [JSONMember("client_name", .string(clientName))]
        if !redirectURIs.isEmpty { members.append(JSONMember("redirect_uris", .array(redirectURIs.map(JSONValue.string)))) }
        members.append(JSONMember("grant_types", .array(grantTypes.map(JSONValue.string))))
        if !responseTypes.isEmpty { members.append(JSONMember("response_types", .array(responseTypes.map(JSONValue.string)))) }
        members.append(JSONMember("token_endpoint_auth_method", .string(tokenEndpointAuthMethod)))
        if let scope { members.append(JSONMember("scope", .string(scope))) }
        var text = JSONValue.object(members).serialized
        if let jwks {
            // The key set is JSON text already (made by `GeneratedClientKey`): spliced in as it is.
            text.removeLast()
            text += ",\"jwks\":" + jwks + "}"
        }
        return Array(text.utf8)
    }

    /// The request's headers besides `Content-Type: application/json` and `Accept:
    /// application/json`: `Authorization: Bearer` with the initial access token when there is one.
    public var authorization: Secret? {
        initialAccessToken.map { Secret("Bearer " + $0.value) }
    }
}

/// The P-256 key a `private_key_jwt` client is registered with: made here, its public JWK set
/// (`kid`: the RFC 7638 thumbprint) sent in the registration, its PKCS#8 PEM kept with the
/// registered client in the token store.
struct GeneratedClientKey {
    let pem: Secret
    /// `{"keys":[{…}]}`.
    let jwks: String

    static func make() throws(CryptoError) -> GeneratedClientKey {
        let key = try PrivateKey.generate(.ecP256)
        let pem = try key.pemRepresentation()
        return GeneratedClientKey(pem: Secret(pem), jwks: try publicKeySet(of: key))
    }

    /// The public JWK set of `key`, its `kid` the thumbprint (`use: sig`, `alg: ES256`).
    static func publicKeySet(of key: PrivateKey) throws(CryptoError) -> String {
        let jwk = try publicJWK(of: key)
        return JSONValue.object([JSONMember("keys", .array([jwk.jsonValue]))]).serialized
    }

    static func publicJWK(of key: PrivateKey) throws(CryptoError) -> JWK {
        var jwk = JWK(components: try key.publicKey.components(), use: "sig", algorithm: JWSAlgorithm.es256.rawValue)
        jwk.keyID = jwk.thumbprint
        return jwk
    }
}
