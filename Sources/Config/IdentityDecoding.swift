extension DecodingContext {
    static let identityKeys = [
        "tokenUrl", "grant", "clientId", "clientSecret", "clientSecretFile", "clientAuth", "scope", "audience",
        "resource", "params", "headers", "username", "password", "passwordFile", "refreshToken", "refreshTokenFile",
        "assertion", "assertionFile", "tls",
    ]

    /// The `identities` object; names are used in URLs, logs and metrics labels, so they are
    /// restricted to letters, digits, `.`, `_` and `-`.
    func decodeIdentities(_ field: Field) -> [String: Identity] {
        guard let object = ObjectReader(field, knownKeys: nil, in: self) else { return [:] }
        var identities: [String: Identity] = [:]
        for (name, member) in object.fields {
            let validName = !name.isEmpty && name.utf8.allSatisfy {
                ASCII.isAlphanumeric($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-")
            }
            if !validName {
                report("identity name \"\(name)\" may only use letters, digits, \".\", \"_\" and \"-\"", at: member)
            }
            if let identity = decodeIdentity(member, name: name), validName {
                identities[name] = identity
            }
        }
        return identities
    }

    private func decodeIdentity(_ field: Field, name: String) -> Identity? {
        guard let object = ObjectReader(field, knownKeys: Self.identityKeys, in: self) else { return nil }
        let tokenUrl = object.required("tokenUrl").flatMap { parsed($0) { url throws(InvalidValue) in try HTTPURL.parse(url, allowsQuery: true) } }
        var identity = Identity(name: name, tokenUrl: tokenUrl ?? HTTPURL(scheme: .https, host: ""))
        let grant = object.field("grant") == nil ? .clientCredentials : object.parsed("grant", Grant.parse)
        identity.grant = grant ?? .clientCredentials
        identity.clientId = object.nonEmptyString("clientId")
        identity.clientSecret = object.secret("clientSecret")
        identity.scope = object.field("scope").flatMap { stringOrStrings($0) }?.map(\.value).joined(separator: " ")
        identity.audience = object.nonEmptyString("audience")
        identity.resource = object.field("resource").flatMap { stringOrStrings($0) }?.compactMap { uri, field in
            guard isAbsoluteURI(uri), !uri.contains("#") else {
                report("a resource must be an absolute URI without a fragment, got \"\(uri)\"", at: field)
                return nil
            }
            return uri
        } ?? []
        identity.params = object.field("params").flatMap(decodeParams) ?? [:]
        identity.headers = object.field("headers").flatMap {
            decodeHeaderFields($0, forbidden: HeaderRules.framingHeaders.union(["host"]))
        }.map { Dictionary($0.map { ($0.name, $0.value) }, uniquingKeysWith: { first, _ in first }) } ?? [:]
        identity.username = object.nonEmptyString("username")
        identity.password = object.secret("password")
        identity.refreshToken = object.secret("refreshToken")
        identity.assertion = object.secret("assertion")
        identity.tls = object.field("tls").flatMap { decodeTLS($0, endpoint: tokenUrl?.scheme, endpointName: "tokenUrl") }
        let explicitAuth = object.parsed("clientAuth") { text throws(InvalidValue) in
            guard let auth = ClientAuth(rawValue: text) else {
                throw InvalidValue("expected basic, post or none, got \"\(text)\"")
            }
            return auth
        }
        identity.clientAuth = explicitAuth ?? (identity.clientSecret == nil ? .publicClient : .basic)
        checkClientAuth(explicitAuth, object: object)
        if let grant {
            checkGrantRequirements(grant, object: object)
        }
        return tokenUrl == nil ? nil : identity
    }

    /// `basic` and `post` need a secret; `none` must not have one.
    private func checkClientAuth(_ auth: ClientAuth?, object: ObjectReader) {
        guard let auth, let field = object.field("clientAuth") else { return }
        let hasSecret = object.field("clientSecret") != nil || object.field("clientSecretFile") != nil
        if auth == .publicClient && hasSecret {
            report("clientAuth is none but a client secret is set", at: field)
        } else if auth != .publicClient && !hasSecret {
            report("clientAuth \(auth.rawValue) needs clientSecret or clientSecretFile", at: field)
        }
    }

    /// Keys a grant needs, and keys only other grants use (a typo or a leftover otherwise).
    private func checkGrantRequirements(_ grant: Grant, object: ObjectReader) {
        func has(_ key: String) -> Bool {
            object.field(key) != nil || object.field(key + "File") != nil
        }
        func requireKey(_ key: String, alternative: String? = nil) {
            guard !has(key) else { return }
            let message = "required for the \(grant) grant" + (alternative.map { " (or \($0))" } ?? "")
            report(message, at: object.path.key(key), offset: object.lastOffset)
        }
        func rejectKey(_ key: String, usedBy: String) {
            for present in [key, key + "File"] {
                if let field = object.field(present) {
                    report("\(present) is only used by \(usedBy), not by the \(grant) grant", at: field)
                }
            }
        }
        if case .extension = grant {} else {
            requireKey("clientId")
        }
        switch grant {
        case .password:
            requireKey("username")
            requireKey("password", alternative: "passwordFile")
        case .refreshToken:
            requireKey("refreshToken", alternative: "refreshTokenFile")
        default:
            break
        }
        if grant != .password {
            rejectKey("username", usedBy: "the password grant")
            rejectKey("password", usedBy: "the password grant")
        }
        if ![.refreshToken, .authorizationCode, .deviceCode].contains(grant) {
            rejectKey("refreshToken", usedBy: "the refresh_token, authorization_code and device_code grants")
        }
        if case .extension = grant {} else {
            rejectKey("assertion", usedBy: "extension grants")
        }
    }

    /// Form fields; `grant_type` is the relay's to set, from `grant`.
    private func decodeParams(_ field: Field) -> [String: String]? {
        guard let members = stringMembers(field) else { return nil }
        var params: [String: String] = [:]
        for (name, value, member) in members {
            if name.isEmpty {
                report("a form field name must not be empty", at: member)
            } else if name == "grant_type" {
                report("grant_type is set from \"grant\"; use \"grant\" instead", at: member)
            } else {
                params[name] = value
            }
        }
        return params
    }
}
