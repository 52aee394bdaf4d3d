import HTTPFields

/// Reads header objects (`routes[].setHeaders`, `identities.*.headers`): names checked against
/// `HeaderRules`, values checked for control characters and never echoed in a message.
struct HeaderFieldsDecoding {
    let context: DecodingContext

    /// An object of header name to value, sorted by lowercased name. Names must be HTTP
    /// tokens, not in `forbidden` and not repeated in another case; values must not hold
    /// control characters (CR, LF, NUL…). Values are never echoed: they may be credentials.
    func decodeHeaderFields(_ field: Field, forbidden: Set<String>) -> [HTTPField]? {
        guard let members = context.stringMembers(field) else { return nil }
        var seen: [String: String] = [:]
        var settings: [HTTPField] = []
        for (name, _, member) in members {
            do {
                _ = try HeaderRules.validName(name, forbidden: forbidden)
            } catch {
                context.report(error.message, at: member)
                continue
            }
            guard let value = headerValue(member) else { continue }
            if let other = seen[name.lowercased()] {
                context.report("header \"\(name)\" is already set as \"\(other)\" (header names ignore case)", at: member)
                continue
            }
            seen[name.lowercased()] = name
            settings.append(HTTPField(name: name, value: value))
        }
        return settings.sorted { $0.name.lowercased() < $1.name.lowercased() }
    }

    /// A header value: a string without control characters.
    func headerValue(_ field: Field) -> String? {
        guard let value = context.string(field) else { return nil }
        guard ASCII.isFieldValue(value) else {
            context.report("header value contains a control character (CR, LF, NUL or similar)", at: field)
            return nil
        }
        return value
    }
}
