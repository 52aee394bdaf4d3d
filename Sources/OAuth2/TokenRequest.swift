import Endpoints
import FoundationEssentials
import HTTPFields
import JOSE
import SafeText

/// One request to an identity's token endpoint, as plain values for the relay's HTTP client:
/// `POST`, `url`, `headers` and the `body` (an OAuth form, or for a GitHub App its JSON:
/// `TokenRequestBody`). The client adds the framing headers itself (`Host`, `Content-Length`)
/// and must not follow a redirect (it is reported as an error, so a secret never goes to another
/// host).
///
/// Built by `grant(for:at:)` (the identity's own grant) or `refresh(for:refreshToken:at:)`, or
/// for the interactive grants and the IdP's other endpoints by the builders in
/// `TokenRequest+Interactive.swift` (the token endpoint given, as discovery may supply it). With
/// private_key_jwt or client_secret_jwt (or as a GitHub App: `TokenRequest+GitHubApp.swift`) it
/// is not ready to send until `withClientAssertion(unixTime:random:)` has signed a fresh assertion
/// (the App JWT) into it, which the token thread does just before sending (signing is not done
/// under the lifecycle's lock); the `client_id` that goes beside a client assertion is in the
/// form already, unless the identity left it out (`clientIdBesideAssertion(of:)`). A Google
/// service account's request likewise waits for its grant assertion (`withGrantAssertion`). An
/// identity with `dpop` adds a proof the same way (`withDPoPProof`, TokenRequest+DPoP.swift). The
/// answer is read with `parseResponse(_:unixTime:)`, which knows the identity's response field
/// names and which secrets this request carried (so none is ever quoted in an error).
public struct TokenRequest: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// What the request is for.
    public enum Purpose: Sendable, Equatable, CustomStringConvertible {
        /// The identity's own grant (for the `refresh_token` grant: its seed refresh token).
        case grant(GrantType)
        /// A refresh with a refresh token the token endpoint issued.
        case refresh
        /// RFC 8628 §3.1, to the device authorization endpoint: a user code for a person.
        case deviceAuthorization
        /// RFC 7009, to the revocation endpoint: a logout.
        case revocation
        /// RFC 7662, to the introspection endpoint: is a caller's token active?
        case introspection

        public var description: String {
            switch self {
            case .grant(let grant): "\(grant) grant"
            case .refresh: "refresh"
            case .deviceAuthorization: "device authorization"
            case .revocation: "revocation"
            case .introspection: "introspection"
            }
        }

        /// A request to the token endpoint (a grant, a refresh, a code exchange, a device poll).
        public var isTokenRequest: Bool {
            switch self {
            case .grant, .refresh: true
            case .deviceAuthorization, .revocation, .introspection: false
            }
        }

        /// The endpoint the request goes to, as error messages name it.
        public var endpointName: String {
            switch self {
            case .grant, .refresh: "the token endpoint"
            case .deviceAuthorization: "the device authorization endpoint"
            case .revocation: "the revocation endpoint"
            case .introspection: "the introspection endpoint"
            }
        }
    }

    public let purpose: Purpose
    public let url: HTTPURL
    public var method: String { "POST" }
    public internal(set) var headers: [HTTPField]
    /// How the answer is read.
    public let responseFormat: TokenResponseFormat
    /// Every secret value the request carries, as sent and form-encoded (and the Basic
    /// credentials, the App JWT), removed from IdP text quoted in errors: a debug page may echo
    /// the request.
    private(set) var secrets: [String]
    /// What the body holds, and the signatures still to be made for it.
    private var content: TokenRequestBody
    /// The form as its builder made it, before the client authentication and `params`: what
    /// `rebuilt(for:)` makes the request of again (TokenRequest+Rebuilt.swift); empty for a GitHub
    /// App's request, which is made again from its grant.
    let builtForm: TokenForm
    /// The token endpoint a client assertion names, when `url` is another endpoint of the IdP.
    let tokenEndpoint: HTTPURL?

    /// The body as sent (its `Content-Type` is among `headers`).
    public var body: [UInt8] { content.bytes }

    /// The names of the form fields or JSON members, in order (for descriptions; the values may
    /// be secret).
    public var fieldNames: [String] { content.fieldNames }

    /// True until the client assertion (or App JWT) this request needs has been added.
    public var needsClientAssertion: Bool { content.needsSignature }

    /// True until the service account's grant assertion this request needs has been added.
    public var needsGrantAssertion: Bool { content.needsGrantAssertion }

    /// The request for the identity's own grant to `tokenEndpoint` (configured or discovered);
    /// nil for an interactive grant (`authorization_code`, `device_code`), which needs a person
    /// first (`authorizationCode(...)`, `deviceCodePoll(...)`), and for a grant on behalf of the
    /// caller, which needs the caller's token (`exchange(for:callerToken:at:)`).
    public static func grant(for identity: Identity, at tokenEndpoint: HTTPURL) -> TokenRequest? {
        guard !identity.grant.isInteractive else { return nil }
        if case .gitHubAppInstallation(let installation) = identity.grant {
            return TokenRequest(gitHubApp: installation, identity: identity, url: tokenEndpoint)
        }
        var form = TokenForm(grantType: identity.grant.grantType)
        switch identity.grant {
        case .password(let username, let password):
            form.add("username", username)
            form.add("password", password)
        case .refreshToken(let seed):
            form.add("refresh_token", seed)
        case .tokenExchange(let subject, let actor):
            form.add(ExtensionFields(subject: subject, actor: actor))
        case .jwtBearer(let assertion):
            form.add(ExtensionFields(assertion: assertion))
        case .extension(_, let fields):
            form.add(fields)
        case .serviceAccount(let account):
            // Its scope goes in the assertion: none of the fields below.
            return serviceAccount(account, for: identity, at: tokenEndpoint)
        case .caller:
            return nil
        case .clientCredentials, .authorizationCode, .deviceCode, .gitHubAppInstallation:
            break
        }
        form.addTarget(of: identity)
        return TokenRequest(purpose: .grant(identity.grant.type), form: form, identity: identity, url: tokenEndpoint)
    }

    /// A refresh (RFC 6749 §6) with a refresh token the endpoint issued. It asks for nothing
    /// new: no `scope`, `audience` or `resource`, so the token keeps what was granted. The
    /// identity's `params` go along unless they are the fields of an extension grant.
    public static func refresh(for identity: Identity, refreshToken: Secret, at tokenEndpoint: HTTPURL) -> TokenRequest {
        var form = TokenForm(grantType: GrantType.refreshToken.grantType)
        form.add("refresh_token", refreshToken)
        return TokenRequest(purpose: .refresh, form: form, identity: identity, url: tokenEndpoint)
    }

    /// A request to `url` with the identity's client authentication and headers. `tokenEndpoint`
    /// (when `url` is another endpoint of the IdP) is what a client assertion's `aud` names: RFC
    /// 7523 §3 and RFC 8628 §3.1 authenticate the client as at the token endpoint. A service
    /// account's request carries the `grantAssertion` its form still needs.
    init(purpose: Purpose, form builtForm: TokenForm, identity: Identity, url: HTTPURL, tokenEndpoint: HTTPURL? = nil,
         grantAssertion: PendingGrantAssertion? = nil) {
        var form = builtForm
        var headers = [HTTPField(name: "Accept", value: "application/json")]
        var pendingAssertion: PendingClientAssertion?
        let audience = Self.assertionAudience(of: identity, tokenEndpoint: tokenEndpoint ?? url)
        // Before the assertion, which the JWT methods add when the request is sent.
        form.add("client_id", Self.clientIdBesideAssertion(of: identity))
        switch identity.clientAuth {
        case .basic(let id, let secret):
            let credentials = Self.basicCredentials(id: id, secret: secret)
            headers.append(HTTPField(name: "Authorization", value: credentials))
            form.remember(secret.value)
            form.remember(String(credentials.dropFirst("Basic ".count)))
        case .post(let id, let secret):
            form.add("client_id", id.isEmpty ? nil : id)
            form.add("client_secret", secret)
        case .publicClient(let id):
            form.add("client_id", id)
        case .unidentified:
            break
        case .privateKeyJWT(let id, let key):
            pendingAssertion = PendingClientAssertion(clientID: id, audience: audience, key: .privateKey(key))
        case .clientSecretJWT(let id, let secret):
            // Never sent, but an IdP's debug page could still quote it back.
            form.remember(secret.value)
            pendingAssertion = PendingClientAssertion(clientID: id, audience: audience, key: .secret(secret))
        case .clientAssertion(_, let assertion):
            form.add("client_assertion_type", ClientAssertion.type)
            form.add("client_assertion", assertion)
        }
        if Self.sendsParams(purpose, identity: identity) {
            form.addParams(identity.params)
        }
        let content = TokenRequestBody.form(form, pendingAssertion: pendingAssertion, pendingGrantAssertion: grantAssertion)
        self.init(purpose: purpose, url: url, headers: headers, content: content, identity: identity, secrets: form.secrets,
                  builtForm: builtForm, tokenEndpoint: tokenEndpoint)
    }

    /// A request of `content` to `url`, its `Content-Type` first, then `headers` and the
    /// identity's own (which replace any of the same name). `builtForm` and `tokenEndpoint`: what
    /// `rebuilt(for:)` needs to make an OAuth request again.
    init(purpose: Purpose, url: HTTPURL, headers: [HTTPField], content: TokenRequestBody, identity: Identity, secrets: [String],
         builtForm: TokenForm = TokenForm(), tokenEndpoint: HTTPURL? = nil) {
        var headers = headers
        if let contentType = content.contentType {
            headers.insert(HTTPField(name: "Content-Type", value: contentType), at: 0)
        }
        for (name, value) in identity.headers.sorted(by: { $0.key.lowercased() < $1.key.lowercased() }) {
            headers.removeAll { $0.name.lowercased() == name.lowercased() }
            headers.append(HTTPField(name: name, value: value))
        }
        self.purpose = purpose
        self.url = url
        self.headers = headers
        self.responseFormat = TokenResponseFormat(identity: identity)
        self.secrets = secrets
        self.content = content
        self.builtForm = builtForm
        self.tokenEndpoint = tokenEndpoint
    }

    /// The request with a new client assertion in its form (`client_assertion_type` and
    /// `client_assertion`, RFC 7521 §4.2), `iat` = `unixTime` (wall-clock seconds) and a `jti`
    /// from `random`; for a GitHub App, with a new App JWT as its `Authorization: Bearer`
    /// (`GitHubAppJWT`, its times from `unixTime`); the request itself when its client
    /// authentication needs neither. Call it once per request sent: an assertion is single-use.
    public func withClientAssertion(unixTime: Int64, random: inout some RandomNumberGenerator) throws(TokenEndpointError) -> TokenRequest {
        var signed = self
        switch content {
        case .form(var form, let pending?, let grantAssertion):
            let assertion = try pending.make(unixTime: unixTime, random: &random)
            form.add("client_assertion_type", ClientAssertion.type)
            form.add("client_assertion", Secret(assertion))
            signed.content = .form(form, pendingAssertion: nil, pendingGrantAssertion: grantAssertion)
            signed.secrets = form.secrets
        case .gitHubApp(let json, let pending?):
            let jwt = try pending.make(unixTime: unixTime)
            signed.headers.removeAll { $0.name.lowercased() == "authorization" }
            signed.headers.append(HTTPField(name: "Authorization", value: "Bearer " + jwt))
            signed.content = .gitHubApp(json, pendingJWT: nil)
            signed.secrets.append(jwt)
        case .form(_, nil, _), .gitHubApp(_, nil):
            return self
        }
        return signed
    }

    /// The request with a new jwt-bearer assertion of its service account in its form
    /// (`assertion`, RFC 7523 §2.1), `iat` = `unixTime` (wall-clock seconds); the request itself
    /// when it needs none. Call it once per request sent, like `withClientAssertion`.
    public func withGrantAssertion(unixTime: Int64) throws(TokenEndpointError) -> TokenRequest {
        guard case .form(var form, let clientAssertion, let pending?) = content else { return self }
        var signed = self
        form.add("assertion", Secret(try pending.make(issuedAt: unixTime)))
        signed.content = .form(form, pendingAssertion: clientAssertion, pendingGrantAssertion: nil)
        signed.secrets = form.secrets
        return signed
    }

    /// The `client_id` form field that goes with a client assertion: the client id, unless the
    /// identity turned it off (`sendClientIdWithAssertion`) for an IdP that refuses it. Nil for
    /// a method without an assertion, which sends its id its own way (or not at all).
    static func clientIdBesideAssertion(of identity: Identity) -> String? {
        guard identity.clientAuth.sendsClientAssertion, identity.sendClientIdWithAssertion,
              let id = identity.clientAuth.clientId, !id.isEmpty else { return nil }
        return id
    }

    /// Whether the identity's `params` go in a request for `purpose`: in its grant and in a
    /// device authorization (where an IdP such as Auth0 wants its extra fields), in a refresh
    /// unless they are an extension grant's own fields, never in a revocation or an introspection.
    private static func sendsParams(_ purpose: Purpose, identity: Identity) -> Bool {
        switch purpose {
        case .grant, .deviceAuthorization: true
        case .refresh: !identity.grant.type.isExtension
        case .revocation, .introspection: false
        }
    }

    /// The `aud` of the identity's client assertions: the token endpoint as sent, or its issuer.
    static func assertionAudience(of identity: Identity, tokenEndpoint: HTTPURL) -> String {
        switch identity.clientAssertionAudience {
        case .tokenEndpoint: tokenEndpoint.description
        case .issuer: identity.issuer ?? tokenEndpoint.description
        }
    }

    /// `Basic base64(urlencode(id) ":" urlencode(secret))`: RFC 6749 §2.3.1 form-encodes both
    /// before joining them, so a `:` or a non-ASCII character in either survives.
    static func basicCredentials(id: String, secret: Secret) -> String {
        let pair = FormURLEncoding.encode(id) + ":" + FormURLEncoding.encode(secret.value)
        return "Basic " + Data(pair.utf8).base64EncodedString()
    }

    /// Reads the token endpoint's answer to this request. `unixTime` is the wall-clock time
    /// (seconds since 1970), for a JWT's `exp` and an HTTP-date `Retry-After`.
    public func parseResponse(_ reply: TokenEndpointReply, unixTime: Double) throws(TokenEndpointError) -> TokenResponse {
        try TokenResponse.parse(reply, format: responseFormat, secrets: secrets, unixTime: unixTime)
    }

    public var description: String {
        "POST \(redactedURL(url)) (\(purpose)) fields: \(fieldNames.joined(separator: ", "))"
    }

    public var debugDescription: String { description }

    public var customMirror: Mirror {
        Mirror(self, children: ["request": description, "headers": headers.map(\.description)], displayStyle: .struct)
    }
}

/// The form fields of a token request being built, and the secrets among their values.
struct TokenForm: Sendable {
    var fields: [(name: String, value: String)]
    var secrets: [String] = []

    init(grantType: String) {
        fields = [("grant_type", grantType)]
    }

    /// A form without `grant_type`: a device authorization or a revocation.
    init() {
        fields = []
    }

    mutating func add(_ name: String, _ value: String?) {
        if let value { fields.append((name, value)) }
    }

    /// What the token is asked for: the identity's `scope`, `audience` and `resource`s.
    mutating func addTarget(of identity: Identity) {
        add("scope", identity.scope)
        add("audience", identity.audience)
        for resource in identity.resource {
            add("resource", resource)
        }
    }

    /// An extension grant's own fields, in the order RFC 7523 and RFC 8693 list them.
    mutating func add(_ fields: ExtensionFields) {
        add("assertion", fields.assertion)
        add("subject_token", fields.subject.token)
        add("subject_token_type", fields.subject.type)
        add("actor_token", fields.actor.token)
        add("actor_token_type", fields.actor.type)
    }

    mutating func add(_ name: String, _ secret: Secret?) {
        guard let secret else { return }
        fields.append((name, secret.value))
        remember(secret.value)
    }

    /// Notes a secret the request carries, and its form-encoded spelling when that differs.
    mutating func remember(_ secret: String) {
        let encoded = FormURLEncoding.encode(secret)
        secrets += encoded == secret ? [secret] : [secret, encoded]
    }

    /// `params`, sorted by name; a param named like a field already set replaces it (the
    /// config reports such a pair, so this only decides for identities built in code).
    mutating func addParams(_ params: [String: String]) {
        for (name, value) in params.sorted(by: { $0.key < $1.key }) {
            fields.removeAll { $0.name == name }
            fields.append((name, value))
        }
    }
}
