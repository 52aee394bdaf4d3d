import Endpoints


/// Where a browser goes once its login ends (`?return=` of the login and status pages, the
/// request a route's login interrupted): a path on the relay itself, checked once here for every
/// page that takes one.
///
/// After a login the relay redirects there, so the path must never leave the relay (an absolute
/// or scheme-relative URL — `https://evil.example`, `//evil.example`, `/\evil.example`, which
/// browsers read as another host — would make the relay an open redirect), and must never lead
/// into the relay's own pages (`/.oauth-relay/`, also when written `/x/../.oauth-relay/` or
/// `/%2Eoauth-relay/`: a login whose end starts another, or a loop).
public enum LoginReturn {
    /// The prefix of the relay's own pages: login starts, status pages, the default callback.
    public static let relayPagesPrefix = "/.oauth-relay/"

    /// `text` (a path with an optional query, as a client sent it) when it may be returned to,
    /// with its path normalized as the relay routes it (dot segments resolved); nil otherwise.
    public static func path(_ text: String) -> String? {
        guard text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { return nil }
        let query = text.firstIndex(of: "?")
        let pathPart = String(text[..<(query ?? text.endIndex)])
        guard pathPart.hasPrefix("/"), !pathPart.hasPrefix("//"), !pathPart.contains("\\"),
              let normalized = RequestPath.normalize(pathPart),
              !normalized.hasPrefix("//"), !normalized.hasPrefix(relayPagesPrefix),
              normalized != String(relayPagesPrefix.dropLast()) else { return nil }
        return normalized + (query.map { String(text[$0...]) } ?? "")
    }
}
