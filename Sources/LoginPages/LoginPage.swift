import HTTPFields
import OAuth2
import SafeText

/// A small, plain HTML page the relay shows a person logging in: a title, a few lines, links,
/// and, while a login is under way, a refresh so the page moves on by itself. Everything put
/// in it is escaped; nothing secret is ever put in it.
public struct LoginPage: Equatable, Sendable {
    public internal(set) var title: String
    var lines: [String] = []
    var links: [(text: String, url: String)] = []
    /// Reload the page after this many seconds (a login in progress), or go to `refreshTo`.
    var refreshSeconds: Int?
    var refreshTo: String?

    public static func == (a: LoginPage, b: LoginPage) -> Bool { a.html == b.html }

    public var html: String {
        var page = "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>\(Self.escape(title))</title>"
        if let refreshSeconds {
            let target = refreshTo.map { "; url=\(Self.escape($0))" } ?? ""
            page += "<meta http-equiv=\"refresh\" content=\"\(refreshSeconds)\(target)\">"
        }
        page += "<meta name=\"robots\" content=\"noindex\"></head>\n<body><h1>\(Self.escape(title))</h1>\n"
        for line in lines { page += "<p>\(Self.escape(line))</p>\n" }
        for (text, url) in links { page += "<p><a href=\"\(Self.escape(url))\">\(Self.escape(text))</a></p>\n" }
        return page + "</body></html>\n"
    }

    /// HTML text and attribute escaping.
    static func escape(_ text: String) -> String {
        var escaped = ""
        escaped.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&#39;"
            default: escaped.append(character)
            }
        }
        return escaped
    }
}

extension DevicePrompt {
    /// The view's members in a problem's JSON (RFC 8628's names, in camel case as the relay's),
    /// each after a comma: in Proxy's 401 problems and in the admin listener's `/identities`.
    public var jsonMembers: String {
        var members = ",\"userCode\":\(JSONText.quote(userCode)),\"verificationUri\":\(JSONText.quote(verificationUri))"
        if let verificationUriComplete { members += ",\"verificationUriComplete\":\(JSONText.quote(verificationUriComplete))" }
        return members + ",\"expiresIn\":\(expiresIn)"
    }
}
