import OAuth2

/// Reads an identity's `responseFields`: where its token endpoint's answers carry the token, its
/// expiry, its type, a new refresh token and the granted scope, each a member name, a path into
/// nested objects joined by dots (`authed_user.access_token`), or an array of such paths (the
/// token's tried in order, the others' read at the alternative the token was found by); and
/// `typeValues`, the IdP's own token type names mapped to `Bearer` or `DPoP`.
struct ResponseFieldsDecoding {
    let context: DecodingContext

    /// What `responseFields` gives, with the `typeValues` members that map to DPoP: those need
    /// the identity's `dpop` key, which the caller checks once it has read `dpop`.
    struct Decoded {
        var fields = ResponseFields()
        var dpopMappings: [Field] = []
    }

    func decodeResponseFields(_ field: Field) -> Decoded? {
        guard let object = ObjectReader(field, knownKeys: ["token", "expiry", "type", "refreshToken", "scope", "typeValues"], in: context) else {
            return nil
        }
        var decoded = Decoded()
        decoded.fields.token = object.field("token").flatMap(decodeMember) ?? decoded.fields.token
        decoded.fields.expiry = object.field("expiry").flatMap(decodeMember) ?? decoded.fields.expiry
        decoded.fields.type = object.field("type").flatMap(decodeMember) ?? decoded.fields.type
        decoded.fields.refreshToken = object.field("refreshToken").flatMap(decodeMember) ?? decoded.fields.refreshToken
        decoded.fields.scope = object.field("scope").flatMap(decodeMember) ?? decoded.fields.scope
        checkAlternatives(object, fields: decoded.fields)
        if let typeValues = object.field("typeValues") {
            decodeTypeValues(typeValues, into: &decoded)
        }
        return decoded
    }

    /// The members read beside the token, each at the token's alternative, by key.
    private static func companions(of fields: ResponseFields) -> [(key: String, member: ResponseMember)] {
        [("expiry", fields.expiry), ("type", fields.type), ("refreshToken", fields.refreshToken), ("scope", fields.scope)]
    }

    /// The i-th path of every member belongs to the token's i-th: a member of one path serves
    /// every alternative, one of several must have as many as `token` (which path would serve a
    /// token found by an alternative it has none for would be a guess).
    private func checkAlternatives(_ object: ObjectReader, fields: ResponseFields) {
        let count = fields.token.paths.count
        for (key, member) in Self.companions(of: fields) {
            let paths = member.paths.count
            guard paths > 1, paths != count, let field = object.field(key) else { continue }
            context.report("has \(paths) paths but token has \(count): the i-th path of each member is read for a token found by "
                           + "token's i-th, so give one path (read whatever the alternative) or \(count)", at: field)
        }
    }

    /// A member path, or an array of them (the i-th read with a token found by token's i-th).
    private func decodeMember(_ field: Field) -> ResponseMember? {
        guard let paths = context.stringOrStrings(field) else { return nil }
        guard !paths.isEmpty else {
            context.report("expected at least one member name", at: field)
            return nil
        }
        var valid = true
        for (path, element) in paths {
            do throws(ResponseMember.PathError) {
                _ = try ResponseMember(dotted: path)
            } catch {
                valid = false
                let message = path.isEmpty ? "must not be empty"
                    : "\"\(path)\" has an empty member name: names are joined by single dots, none first or last "
                    + "(a member whose own name holds a dot cannot be named)"
                context.report(message, at: element)
            }
        }
        guard valid else { return nil }
        return try? ResponseMember(alternatives: paths.map(\.value))
    }

    /// `typeValues`: each of the IdP's own type names (compared case-insensitively, as token
    /// types are, RFC 6749 §5.1) to `Bearer` or `DPoP`. The standard names themselves cannot be
    /// mapped: a `Bearer` token sent as DPoP, or the reverse, would be refused upstream.
    private func decodeTypeValues(_ field: Field, into decoded: inout Decoded) {
        guard let members = context.stringMembers(field) else { return }
        var seen = Set<String>()
        for (name, target, member) in members {
            let key = name.lowercased()
            if name.isEmpty {
                context.report("a token type name must not be empty", at: member)
            } else if key == "bearer" || key == "dpop" {
                context.report("\(name) is a token type the relay knows already; map only the IdP's own names", at: member)
            } else if !seen.insert(key).inserted {
                context.report("\"\(name)\" names the same token type as an earlier key (token types compare case-insensitively)",
                               at: member)
            } else {
                switch target.lowercased() {
                case "bearer":
                    decoded.fields.typeValues[key] = "Bearer"
                case "dpop":
                    decoded.fields.typeValues[key] = "DPoP"
                    decoded.dpopMappings.append(member)
                default:
                    context.report("expected Bearer or DPoP, the token types the relay can send, got \"\(target)\"", at: member)
                }
            }
        }
    }
}
