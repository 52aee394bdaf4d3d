import OAuth2

/// Reads a grant on behalf of the caller (`Grant.caller`): `subjectTokenFrom: "caller"` on the
/// token exchange grant (RFC 8693, the caller's token as `subject_token`), `assertionFrom:
/// "caller"` on the jwt-bearer grant (Entra ID's on-behalf-of flow), and `maxCallers`, the bound of
/// the per-caller cache. The caller's token takes the place of the literal subject or assertion,
/// so a key or `params` field that would give one too is reported, as are `maxCallers` without a
/// caller grant and `dpop` with one.
struct CallerGrantDecoding {
    let context: DecodingContext

    /// The bounds of `maxCallers`: one caller at least, and at most a million (about a gigabyte
    /// with kilobyte tokens, README "Tokens per caller").
    static let maxCallersRange = 1...1_000_000

    /// The caller grant `object` asks for (its `grant` is `grant`; `subjectTokenType` and `actor`
    /// from their keys), or nil when it asks for none or asks wrongly (reported).
    func decodeCallerGrant(_ object: ObjectReader, grant: GrantType, subjectTokenType: String?, actor: ExchangedToken) -> CallerGrant? {
        let subjectFrom = object.field("subjectTokenFrom")
        let assertionFrom = object.field("assertionFrom")
        if subjectFrom != nil, let assertionFrom {
            context.report("set either subjectTokenFrom (token exchange) or assertionFrom (on-behalf-of), not both", at: assertionFrom)
            return nil
        }
        if let subjectFrom {
            guard fromCaller(subjectFrom), usedBy(.tokenExchange, key: "subjectTokenFrom", grant: grant, at: subjectFrom) else { return nil }
            let conflicts = [
                conflict(object, key: "subjectToken", "the subject token is the caller's (subjectTokenFrom); set one of them"),
                conflict(object, key: "subjectTokenFile", "the subject token is the caller's (subjectTokenFrom); set one of them"),
                paramConflict(object, "subject_token", "the subject token is the caller's (subjectTokenFrom)"),
                paramConflict(object, "subject_token_type", "it is set from \"subjectTokenType\" (default "
                              + "\(CallerGrant.accessTokenType)) with subjectTokenFrom"),
            ]
            guard !conflicts.contains(true) else { return nil }
            return .tokenExchange(subjectTokenType: subjectTokenType ?? CallerGrant.accessTokenType, actor: actor)
        }
        if let assertionFrom {
            guard fromCaller(assertionFrom), usedBy(.jwtBearer, key: "assertionFrom", grant: grant, at: assertionFrom) else { return nil }
            let conflicts = [
                conflict(object, key: "assertion", "the assertion is the caller's token (assertionFrom); set one of them"),
                conflict(object, key: "assertionFile", "the assertion is the caller's token (assertionFrom); set one of them"),
                conflict(object, key: "serviceAccountKeyFile", "a service account signs its own assertion; assertionFrom sends "
                         + "the caller's token instead: set one of them"),
                paramConflict(object, "assertion", "the assertion is the caller's token (assertionFrom)"),
                paramConflict(object, "requested_token_use", "assertionFrom sends requested_token_use=on_behalf_of itself"),
            ]
            for key in ["subjectToken", "subjectTokenFile", "subjectTokenType", "actorToken", "actorTokenFile", "actorTokenType"] {
                if let field = object.field(key) {
                    context.report("\(key) is only used by the token exchange grant, not by an on-behalf-of exchange (assertionFrom)",
                                   at: field)
                }
            }
            guard !conflicts.contains(true) else { return nil }
            return .onBehalfOf
        }
        return nil
    }

    /// `maxCallers` for an identity with (`isCaller`) or without a caller grant; the default
    /// when absent. Reported (nil) out of range or without a caller grant.
    func decodeMaxCallers(_ object: ObjectReader, isCaller: Bool) -> Int? {
        guard let field = object.field("maxCallers") else { return Identity.defaultMaxCallers }
        guard isCaller || object.field("subjectTokenFrom") != nil || object.field("assertionFrom") != nil else {
            context.report("maxCallers is only used by an identity that exchanges its callers' tokens (subjectTokenFrom or assertionFrom)",
                           at: field)
            return nil
        }
        return context.integer(field, in: Self.maxCallersRange, rangeDescription: "from 1 to 1000000 callers")
    }

    /// A Google service account is its own client and subject: no caller's token goes with it.
    func checkServiceAccount(_ object: ObjectReader) {
        for key in ["subjectTokenFrom", "assertionFrom"] {
            if let field = object.field(key) {
                context.report("\(key) is not used with serviceAccountKeyFile: a service account's assertion is its own", at: field)
            }
        }
    }

    /// A DPoP key would bind each caller's token to the relay's key: not offered per caller.
    func checkDPoP(_ object: ObjectReader) {
        guard let dpop = object.field("dpop"), object.field("subjectTokenFrom") != nil || object.field("assertionFrom") != nil else { return }
        if case .bool(false) = dpop.value.kind { return }
        context.report("dpop is not supported for tokens exchanged per caller (subjectTokenFrom, assertionFrom)", at: dpop)
    }

    /// `"caller"`, the only source there is; anything else reported.
    private func fromCaller(_ field: Field) -> Bool {
        guard let text = context.string(field) else { return false }
        guard text == "caller" else {
            context.report("expected \"caller\" (the request's bearer token), got \"\(text)\"", at: field)
            return false
        }
        return true
    }

    private func usedBy(_ needed: GrantType, key: String, grant: GrantType, at field: Field) -> Bool {
        guard grant != needed else { return true }
        context.report("\(key) is only used by the \(needed) grant, not by the \(grant) grant", at: field)
        return false
    }

    /// Reports `key` with `message` when it is set; returns whether it was.
    private func conflict(_ object: ObjectReader, key: String, _ message: String) -> Bool {
        guard let field = object.field(key) else { return false }
        context.report(message, at: field)
        return true
    }

    /// Reports `params.<name>` with `message` when it is set; returns whether it was.
    private func paramConflict(_ object: ObjectReader, _ name: String, _ message: String) -> Bool {
        guard let params = object.field("params"), case .object(let members) = params.value.kind,
              let member = members.first(where: { $0.key == name }) else { return false }
        context.report(message, at: params.path.key(name), offset: member.keyOffset)
        return true
    }
}
