import Endpoints
import HTTPFields
import OAuth2
import SafeText

/// Reads `identities`: each identity's token endpoint, grant, credentials, request fields and
/// options. The keys each grant needs or must not have are `IdentityKeyChecks`'s, the client
/// authentication `ClientAuthDecoding`'s, a Google service account's `ServiceAccountDecoding`'s.
struct IdentityDecoding {
    let context: DecodingContext

    static let identityKeys = [
        "tokenUrl", "grant", "clientId", "clientSecret", "clientSecretFile", "clientAuth", "scope", "audience",
        "resource", "params", "headers", "username", "password", "passwordFile", "refreshToken", "refreshTokenFile",
        "assertion", "assertionFile", "tls", "allowInsecureTokenUrl", "defaultExpiresInSeconds", "refreshSkewSeconds",
        "responseFields", "subjectToken", "subjectTokenFile", "subjectTokenType", "actorToken", "actorTokenFile",
        "actorTokenType", "issuer", "clientKeyFile", "clientKeyId", "clientAssertionAlg", "clientAssertionAudience",
        "clientCertFile", "clientCertHeaders", "sendClientIdWithAssertion",
        "authorizationUrl", "deviceAuthorizationUrl", "jwksUrl", "revocationUrl", "redirectUri", "loginTimeoutSeconds",
        "allowRemoteUse", "authorizationParams",
        "dpop", "serviceAccountKeyFile", "serviceAccountSubject", "selfSignedJwt", "clientAssertionFile",
        "appId", "installationId", "githubApiUrl", "repositories", "repositoryIds", "permissions",
        "subjectTokenFrom", "assertionFrom", "maxCallers",
    ]

    /// The keys naming files whose credential the token thread reads again when they change
    /// (`Identity.credentialFiles`), and the credential each holds.
    static let credentialFileKeys: [(key: String, role: CredentialRole)] = [
        ("clientSecretFile", .clientSecret), ("passwordFile", .password), ("refreshTokenFile", .refreshToken),
        ("assertionFile", .assertion), ("subjectTokenFile", .subjectToken), ("actorTokenFile", .actorToken),
        ("clientKeyFile", .clientKey), ("clientCertFile", .clientCertificate), ("clientAssertionFile", .clientAssertion),
        ("serviceAccountKeyFile", .serviceAccountKey),
    ]

    /// Form fields the relay sets from a dedicated key: `params` may not set them again.
    static let formFieldKeys = [
        "client_id": "clientId", "client_secret": "clientSecret", "username": "username", "password": "password",
        "refresh_token": "refreshToken", "assertion": "assertion", "subject_token": "subjectToken",
        "subject_token_type": "subjectTokenType", "actor_token": "actorToken", "actor_token_type": "actorTokenType",
        "scope": "scope", "audience": "audience", "resource": "resource",
    ]

    /// The `identities` object; names are used in URLs, logs and metrics labels, so they are
    /// restricted to letters, digits, `.`, `_` and `-`.
    func decodeIdentities(_ field: Field) -> [String: Identity] {
        guard let object = ObjectReader(field, knownKeys: nil, in: context) else { return [:] }
        var identities: [String: Identity] = [:]
        for (name, member) in object.fields.lazy.map({ ($0.key, $0.field) }) {
            let validName = !name.isEmpty && name.utf8.allSatisfy {
                ASCII.isAlphanumeric($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-")
            }
            if !validName {
                context.report("identity name \"\(name)\" may only use letters, digits, \".\", \"_\" and \"-\"", at: member)
            }
            if let identity = decodeIdentity(member, name: name), validName {
                identities[name] = identity
            }
        }
        return identities
    }

    private func decodeIdentity(_ field: Field, name: String) -> Identity? {
        guard let object = ObjectReader(field, knownKeys: Self.identityKeys, in: context) else { return nil }
        // Keys are read in one fixed order (reading reports errors), so `check` lists them in that
        // order; the grant and client authentication are made from the values at the end.
        let grant = object.field("grant") == nil ? .clientCredentials : object.parsed("grant", GrantType.parse)
        // A GitHub App asks GitHub's API (`githubApiUrl`), not a token URL, with keys of its own.
        let gitHub = grant == .gitHubAppInstallation ? GitHubAppDecoding(context: context) : nil
        // Without `issuer` the token URL is required; with it, discovery supplies what is not set,
        // and a service account's key file names it (`token_uri`, which `tokenUrl` overrides).
        let hasIssuer = object.field("issuer") != nil
        let serviceAccountKeyFile = object.field("serviceAccountKeyFile")
        let serviceAccountKey = serviceAccountKeyFile.flatMap { context.files.serviceAccountKey(inFile: $0) }
        let tokenUrlNeeded = !hasIssuer && serviceAccountKeyFile == nil && gitHub == nil
        let tokenUrlField = tokenUrlNeeded ? object.required("tokenUrl") : object.field("tokenUrl")
        let tokenUrl = tokenUrlField.flatMap {
            context.parsed($0) { url throws(InvalidValue) in try HTTPURL.parse(url, allowsQuery: true) }
        } ?? serviceAccountKey?.tokenURI
        let gitHubAPI = gitHub?.decodeAPIURL(object)
        let installation = gitHub?.decodeInstallation(object)
        let gitHubTokenURL = gitHubAPI.flatMap { installation?.accessTokensURL(api: $0) }
        var identity = Identity(name: name, tokenUrl: gitHub == nil ? tokenUrl : gitHubTokenURL)
        let clientId = object.nonEmptyString("clientId")
        let clientSecret = object.secret("clientSecret")
        identity.scope = object.field("scope").flatMap { context.stringOrStrings($0) }?.map(\.value).joined(separator: " ")
        identity.audience = object.nonEmptyString("audience")
        identity.resource = object.field("resource").flatMap { context.stringOrStrings($0) }?.compactMap { uri, field in
            guard isAbsoluteURI(uri), !uri.contains("#") else {
                context.report("a resource must be an absolute URI without a fragment, got \"\(uri)\"", at: field)
                return nil
            }
            return uri
        } ?? []
        identity.params = object.field("params").flatMap { decodeParams($0, identity: object) } ?? [:]
        identity.headers = object.field("headers").flatMap {
            HeaderFieldsDecoding(context: context).decodeHeaderFields($0, forbidden: HeaderRules.framingHeaders.union(["host"]))
        }.map { Dictionary($0.map { ($0.name, $0.value) }, uniquingKeysWith: { first, _ in first }) } ?? [:]
        let username = object.nonEmptyString("username")
        let password = object.secret("password")
        let refreshToken = object.secret("refreshToken")
        let assertion = object.secret("assertion")
        identity.tls = object.field("tls").flatMap {
            TLSSettingsDecoding(context: context).decodeTLS($0, endpoint: gitHub == nil ? tokenUrl?.scheme : gitHubAPI?.scheme,
                                                            endpointName: gitHub == nil ? "tokenUrl" : "githubApiUrl")
        }
        identity.allowInsecureTokenUrl = object.bool("allowInsecureTokenUrl") ?? identity.allowInsecureTokenUrl
        identity.defaultExpiresInSeconds = object.seconds("defaultExpiresInSeconds") ?? identity.defaultExpiresInSeconds
        identity.refreshSkewSeconds = object.seconds("refreshSkewSeconds") ?? identity.refreshSkewSeconds
        let responseFields = object.field("responseFields").flatMap(ResponseFieldsDecoding(context: context).decodeResponseFields)
        identity.responseFields = responseFields?.fields ?? identity.responseFields
        let subject = ExchangedToken(token: object.secret("subjectToken"), type: object.parsed("subjectTokenType", tokenTypeURI))
        let actor = ExchangedToken(token: object.secret("actorToken"), type: object.parsed("actorTokenType", tokenTypeURI))
        identity.issuer = object.parsed("issuer") { url throws(InvalidValue) in
            guard isAbsoluteURI(url) else { throw InvalidValue("expected the issuer's absolute URL, got \"\(url)\"") }
            return url
        }
        identity.authorizationUrl = object.parsed("authorizationUrl") { url throws(InvalidValue) in try HTTPURL.parse(url, allowsQuery: true) }
        identity.deviceAuthorizationUrl = object.parsed("deviceAuthorizationUrl") { url throws(InvalidValue) in try HTTPURL.parse(url, allowsQuery: true) }
        identity.jwksUrl = object.parsed("jwksUrl") { url throws(InvalidValue) in try HTTPURL.parse(url, allowsQuery: true) }
        identity.revocationUrl = object.parsed("revocationUrl") { url throws(InvalidValue) in try HTTPURL.parse(url, allowsQuery: true) }
        identity.redirectUri = object.parsed("redirectUri") { url throws(InvalidValue) in try HTTPURL.parse(url, allowsQuery: false) }
        identity.loginTimeoutSeconds = object.seconds("loginTimeoutSeconds") ?? identity.loginTimeoutSeconds
        identity.allowRemoteUse = object.bool("allowRemoteUse") ?? identity.allowRemoteUse
        identity.authorizationParams = object.field("authorizationParams").flatMap {
            decodeAuthorizationParams($0, identity: object)
        } ?? [:]
        let callerGrants = CallerGrantDecoding(context: context)
        // A GitHub App's JWT is its client authentication (the grant carries it); the keys of the
        // OAuth methods and DPoP are reported unused (`GitHubAppDecoding`), not read.
        if gitHub == nil {
            identity.dpop = object.field("dpop").flatMap(DPoPDecoding(context: context).decodeDPoP)
            callerGrants.checkDPoP(object)
            checkDPoPMappings(responseFields?.dpopMappings ?? [], dpop: object.field("dpop"))
        }
        let serviceAccount = ServiceAccountDecoding(context: context)
        var usable = true
        if serviceAccountKeyFile != nil {
            // The key file is the client and its credentials: no client authentication.
            let grant = serviceAccount.decodeGrant(object, key: serviceAccountKey, grant: grant, scope: identity.scope,
                                                   audience: identity.audience)
            identity.grant = grant ?? identity.grant
            usable = grant != nil
            callerGrants.checkServiceAccount(object)
        } else {
            serviceAccount.checkKeysWithoutKeyFile(object)
            if gitHub == nil {
                let clientAuth = ClientAuthDecoding(context: context)
                identity.clientAssertionAudience = clientAuth.decodeAssertionAudience(object) ?? .tokenEndpoint
                identity.sendClientIdWithAssertion = clientAuth.decodeSendClientId(object) ?? identity.sendClientIdWithAssertion
                identity.clientAuth = clientAuth.decodeClientAuth(object, id: clientId, secret: clientSecret)
            }
            identity.grant = Self.grant(grant ?? .clientCredentials, username: username, password: password, refreshToken: refreshToken,
                                        extensionFields: ExtensionFields(assertion: assertion, subject: subject, actor: actor),
                                        installation: installation)
            if let grant {
                // The caller's token as the subject or assertion (`subjectTokenFrom`, `assertionFrom`).
                if let caller = callerGrants.decodeCallerGrant(object, grant: grant, subjectTokenType: subject.type, actor: actor) {
                    identity.grant = .caller(caller)
                }
                IdentityKeyChecks(context: context).checkGrantRequirements(grant, object: object)
            }
        }
        identity.maxCallers = callerGrants.decodeMaxCallers(object, isCaller: identity.grant.callerGrant != nil) ?? identity.maxCallers
        IdentityKeyChecks(context: context).checkInteractiveKeys(identity, object: object)
        identity.credentialFiles = Self.credentialFileKeys.compactMap { key, role in
            guard identity.holdsCredential(role), let path = object.filePath(key) else { return nil }
            return CredentialFile(role: role, path: path, key: key)
        }
        return !usable || (identity.tokenUrl == nil && !hasIssuer) ? nil : identity
    }

    /// The grant `type` makes of the values its keys gave. A value a grant needs and lacks is
    /// reported by `checkGrantRequirements` (the empty stand-in is never sent: the config fails).
    private static func grant(_ type: GrantType, username: String?, password: Secret?, refreshToken: Secret?,
                              extensionFields fields: ExtensionFields, installation: GitHubAppInstallation?) -> Grant {
        switch type {
        case .clientCredentials: return .clientCredentials
        case .password: return .password(username: username ?? "", password: password ?? Secret(""))
        case .refreshToken: return .refreshToken(refreshToken ?? Secret(""))
        case .authorizationCode: return .authorizationCode(seed: refreshToken)
        case .deviceCode: return .deviceCode(seed: refreshToken)
        case .extension(let uri):
            // The specific cases when the fields are those grants' own; any other mix keeps
            // every field the config set, as an extension grant sends them.
            if type == .tokenExchange && fields.assertion == nil {
                return .tokenExchange(subject: fields.subject, actor: fields.actor)
            }
            if type == .jwtBearer && fields.subject == ExchangedToken() && fields.actor == ExchangedToken() {
                return .jwtBearer(assertion: fields.assertion)
            }
            return .extension(uri: uri, fields: fields)
        case .gitHubAppInstallation:
            // Without its values (reported), the identity has no token URL and is not used.
            return installation.map(Grant.gitHubAppInstallation) ?? .clientCredentials
        }
    }

    /// A `responseFields.typeValues` entry mapping to DPoP needs the identity's DPoP key: with
    /// `dpop` absent or `false` there is none (an invalid `dpop` has its own error).
    private func checkDPoPMappings(_ mappings: [Field], dpop: Field?) {
        switch dpop?.value.kind {
        case nil, .bool(false)?:
            for mapping in mappings {
                context.report("maps to DPoP, but the identity has no dpop key to prove possession with", at: mapping)
            }
        default:
            break
        }
    }

    /// Form fields; `grant_type` is the relay's to set, from `grant`, and so is every field whose
    /// dedicated key the identity sets.
    private func decodeParams(_ field: Field, identity: ObjectReader) -> [String: String]? {
        guard let members = context.stringMembers(field) else { return nil }
        var params: [String: String] = [:]
        for (name, value, member) in members {
            if name.isEmpty {
                context.report("a form field name must not be empty", at: member)
            } else if name == "grant_type" {
                context.report("grant_type is set from \"grant\"; use \"grant\" instead", at: member)
            } else if let key = Self.formFieldKeys[name], identity.has(key) {
                context.report("\(name) is already set from \"\(key)\"; set it in one place", at: member)
            } else {
                params[name] = value
            }
        }
        return params
    }

    /// Keys that set a parameter of every authorization request: `authorizationParams` may not.
    static let authorizationRequestKeys = ["client_id": "clientId", "redirect_uri": "redirectUri", "scope": "scope"]

    /// `authorizationParams`: query parameters a login's authorization request adds to the
    /// standard ones. Never one the relay sets (`AuthorizationRequest.relayParameters`), nor a
    /// request object (`request`, `request_uri`: RFC 9101, which would replace them), nor a
    /// `response_mode` but `query` (the callback reads the query), nor `audience` or `resource`
    /// when the identity's own keys send them.
    private func decodeAuthorizationParams(_ field: Field, identity: ObjectReader) -> [String: String]? {
        guard let members = context.stringMembers(field) else { return nil }
        var params: [String: String] = [:]
        for (name, value, member) in members {
            if name.isEmpty {
                context.report("a query parameter name must not be empty", at: member)
            } else if let key = Self.authorizationRequestKeys[name] {
                context.report("\(name) is set from \"\(key)\"; set it there", at: member)
            } else if AuthorizationRequest.relayParameters.contains(name) {
                context.report("\(name) is the relay's to set for each login: response_type is always code, and state, nonce, "
                               + "code_challenge and code_challenge_method tie the code to the login that asked for it", at: member)
            } else if name == "request" || name == "request_uri" {
                context.report("\(name) would replace the relay's authorization request (RFC 9101: the IdP reads the parameters "
                               + "from the request object, not the query), and with them its state, PKCE challenge and redirect_uri",
                               at: member)
            } else if name == "response_mode", value != "query" {
                context.report("the relay's callback reads the code from the query: response_mode can only be query, "
                               + "got \"\(value)\"", at: member)
            } else if name == "audience" || name == "resource", identity.has(name) {
                context.report("\(name) is already sent from \"\(name)\"; set it in one place", at: member)
            } else {
                params[name] = value
            }
        }
        return params
    }
}

/// An RFC 8693 token type identifier, such as `urn:ietf:params:oauth:token-type:jwt`.
private func tokenTypeURI(_ text: String) throws(InvalidValue) -> String {
    guard isAbsoluteURI(text) else {
        throw InvalidValue("expected a token type URI such as urn:ietf:params:oauth:token-type:jwt, got \"\(text)\"")
    }
    return text
}
