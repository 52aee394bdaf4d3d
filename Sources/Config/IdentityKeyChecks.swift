import OAuth2

/// The keys an identity's grant needs, and keys only other grants use (a typo or a leftover
/// otherwise), reported once the identity's keys are read: the grant's own credentials, the
/// token exchange's token types, and the keys and endpoints of interactive grants.
struct IdentityKeyChecks {
    let context: DecodingContext

    /// Keys a grant needs, and keys only other grants use (a typo or a leftover otherwise).
    func checkGrantRequirements(_ grant: GrantType, object: ObjectReader) {
        func requireKey(_ key: String, alternative: String? = nil) {
            guard !object.has(key) else { return }
            let message = "required for the \(grant) grant" + (alternative.map { " (or \($0))" } ?? "")
            context.report(message, at: object.path.key(key), offset: object.lastOffset)
        }
        // Most identities set none of the keys asked about: a key and its `…File` form are
        // looked for only when some key starts with it, and the message is written only for
        // one that is there (writing both names for each key was a fifth of decoding an identity).
        func rejectKey(_ key: String, usedBy: @autoclosure () -> String) {
            guard object.fields.contains(where: { $0.key.utf8.starts(with: key.utf8) }) else { return }
            for present in [key, key + "File"] {
                if let field = object.field(present) {
                    context.report("\(present) is only used by \(usedBy()), not by the \(grant) grant", at: field)
                }
            }
        }
        // An extension grant's assertion or token may identify the client; a GitHub App's JWT does,
        // and so does a client assertion the platform wrote (its sub, RFC 7521 §4.2: `check` warns
        // that Entra ID wants client_id too, `RelayConfig.assertionWithoutClientIdWarnings`).
        let platformAssertion = if case .string("client_assertion_file") = object.field("clientAuth")?.value.kind { true } else { false }
        if !grant.isExtension && grant != .gitHubAppInstallation && !platformAssertion {
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
            for key in ["assertion", "subjectToken", "subjectTokenType", "actorToken", "actorTokenType"] {
                rejectKey(key, usedBy: "extension grants")
            }
        }
        if grant != .gitHubAppInstallation {
            for key in GitHubAppDecoding.keys {
                rejectKey(key, usedBy: "the \(GrantType.gitHubAppInstallation) grant")
            }
        }
        checkTokenExchangeFields(grant, object: object)
    }

    /// RFC 8693: a token comes with its type; the token exchange grant needs a subject token,
    /// the jwt-bearer grant (RFC 7523) an assertion, either from their keys or from `params`.
    private func checkTokenExchangeFields(_ grant: GrantType, object: ObjectReader) {
        func hasParam(_ name: String) -> Bool {
            guard case .object(let members) = object.field("params")?.value.kind else { return false }
            return members.contains { $0.key == name }
        }
        var missing: [(key: String, message: String)] = []
        for (token, type) in [("subjectToken", "subjectTokenType"), ("actorToken", "actorTokenType")]
        where object.has(token) && !object.has(type) {
            missing.append((type, "required with \(token) (RFC 8693)"))
        }
        let required: [(grant: GrantType, key: String, field: String)] = [
            (.tokenExchange, "subjectToken", "subject_token"), (.tokenExchange, "subjectTokenType", "subject_token_type"),
            (.jwtBearer, "assertion", "assertion"),
        ]
        // The caller's token is the subject or the assertion (CallerGrantDecoding).
        let fromCaller: [GrantType: String] = [.tokenExchange: "subjectTokenFrom", .jwtBearer: "assertionFrom"]
        for (needingGrant, key, field) in required
        where grant == needingGrant && !object.has(key) && !hasParam(field) && !missing.contains(where: { $0.key == key })
            && object.field(fromCaller[needingGrant] ?? "") == nil {
            missing.append((key, "required for the \(grant) grant (or params.\(field))"))
        }
        for (key, message) in missing {
            context.report(message, at: object.path.key(key), offset: object.lastOffset)
        }
    }

    /// Keys only interactive grants use, and endpoints a grant needs when no `issuer` can
    /// supply them by discovery.
    func checkInteractiveKeys(_ identity: Identity, object: ObjectReader) {
        let grant = identity.grant.type
        let onlyFor: [(key: String, grants: [GrantType], usedBy: String)] = [
            ("authorizationUrl", [.authorizationCode], "the authorization_code grant"),
            ("redirectUri", [.authorizationCode], "the authorization_code grant"),
            // A device login's request is a form the IdP reads, not a page a person opens.
            ("authorizationParams", [.authorizationCode], "the authorization_code grant's authorization request"),
            ("deviceAuthorizationUrl", [.deviceCode], "the device_code grant"),
            ("loginTimeoutSeconds", [.authorizationCode, .deviceCode], "the authorization_code and device_code grants"),
            ("allowRemoteUse", [.authorizationCode, .deviceCode], "the authorization_code and device_code grants"),
        ]
        for (key, grants, usedBy) in onlyFor where !grants.contains(grant) {
            if let field = object.field(key) { context.report("\(key) is only used by \(usedBy), not by the \(grant) grant", at: field) }
        }
        if case .authorizationCode = identity.grant, identity.requestsIDToken, identity.issuer == nil {
            context.report("required when the scope asks for openid: the ID token's iss is checked against it",
                           at: object.path.key("issuer"), offset: object.lastOffset)
        }
        guard identity.issuer == nil else { return }
        // The endpoints the grant needs are OAuth2's `requiredEndpoints`, which discovery checks
        // too; `tokenUrl` has its own check, shared with the other grants. A key present but
        // invalid has its error already.
        for endpoint in identity.requiredEndpoints where endpoint != .token && object.field(endpoint.configKey) == nil {
            let why = endpoint == .jwks ? "to check the ID token a scope with \"openid\" asks for" : "for the \(grant) grant"
            context.report("required \(why) (or \"issuer\", to discover it)", at: object.path.key(endpoint.configKey),
                           offset: object.lastOffset)
        }
    }
}
