import HTTPFields

/// Text from a token endpoint made safe to put in an error, a log line or a problem body: no
/// secret the request carried, no control characters, at most `limit` bytes.
enum ErrorText {
    static let limit = 200

    /// Field names whose presence in a body means it may hold a token: such a body is never
    /// quoted.
    static let tokenFieldNames = ["access_token", "refresh_token", "id_token"]

    /// `text` with every secret replaced by `…`, control characters and runs of whitespace
    /// turned into one space, and cut to `limit` bytes on a character boundary (`…` added).
    static func clean(_ text: String, removing secrets: [String]) -> String {
        var text = text
        for secret in secrets where !secret.isEmpty {
            text = text.replacing(secret, with: "…")
        }
        var cleaned = ""
        var pendingSpace = false
        for character in text {
            if character.isWhitespace || character.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
                pendingSpace = !cleaned.isEmpty
                continue
            }
            if pendingSpace {
                cleaned.append(" ")
                pendingSpace = false
            }
            guard cleaned.utf8.count + String(character).utf8.count <= limit else {
                return cleaned + "…"
            }
            cleaned.append(character)
        }
        return cleaned
    }

    /// The first bytes of an error body, as text (the text of an HTML page without its tags,
    /// scripts and styles); nil when the body is empty or could hold a token.
    static func excerpt(of reply: TokenEndpointReply, format: TokenResponseFormat, removing secrets: [String]) -> String? {
        let body = String(decoding: reply.body, as: UTF8.self)
        let lowered = body.lowercased()
        let configured = format.fields.token.memberNames + format.fields.refreshToken.memberNames
        let tokenNames = tokenFieldNames + configured.map { $0.lowercased() }
        guard !tokenNames.contains(where: { lowered.contains($0) }) else { return nil }
        let isHTML = reply.mediaType?.contains("html") ?? false || lowered.hasPrefix("<!doctype html") || lowered.hasPrefix("<html")
        let text = clean(isHTML ? textOfHTML(body) : body, removing: secrets)
        return text.isEmpty ? nil : text
    }

    /// A redirect's `Location` without its query and fragment (where codes and tokens travel).
    static func location(_ location: String, removing secrets: [String]) -> String {
        clean(String(location.prefix { $0 != "?" && $0 != "#" }), removing: secrets)
    }

    /// The text of an HTML document: tags and comments dropped, `<script>` and `<style>`
    /// elements dropped whole, each tag a word break.
    static func textOfHTML(_ html: String) -> String {
        var text = ""
        var rest = Substring(html)
        while let open = rest.firstIndex(of: "<") {
            text += rest[..<open]
            text += " "
            let tag = rest[open...]
            let lowered = tag.prefix(8).lowercased()
            let end: String
            if lowered.hasPrefix("<!--") {
                end = "-->"
            } else if lowered.hasPrefix("<script") {
                end = "</script>"
            } else if lowered.hasPrefix("<style") {
                end = "</style>"
            } else {
                end = ">"
            }
            guard let close = endOfFirst(end, in: tag) else { return text }
            rest = tag[close...]
        }
        return text + rest
    }

    /// Where the first `lowercase` (ASCII, in lower case) in `text` ends, ASCII case ignored.
    private static func endOfFirst(_ lowercase: String, in text: Substring) -> String.Index? {
        let pattern = Array(lowercase.utf8)
        let bytes = text.utf8
        var index = bytes.startIndex
        while index != bytes.endIndex {
            if bytes[index...].starts(with: pattern, by: { ASCII.lowercased($0) == $1 }) {
                return bytes.index(index, offsetBy: pattern.count)
            }
            bytes.formIndex(after: &index)
        }
        return nil
    }
}
