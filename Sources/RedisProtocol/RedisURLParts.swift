import SafeText

/// What every form of `store.redis` (`redis://`, `redis-cluster://`, `redis-sentinel://` and their
/// TLS schemes) shares after its `://`, split and checked one way: the user info, the hosts, the
/// path. No error quotes the URL: it may hold a password.
struct RedisURLParts {
    /// The host (or the comma-separated hosts), the user info removed.
    var hosts: Substring
    /// Empty, or from the first "/" on.
    var path: Substring
    var user: String?
    var password: Secret?

    /// `rest`: the text after `://`; `form`: the URL form the errors name (`redis://`).
    init(afterScheme rest: Substring, form: String) throws(RedisURLError) {
        if rest.contains("?") || rest.contains("#") {
            throw RedisURLError("a query (?…) or fragment (#…) is not allowed in a \(form) URL")
        }
        // The user info ends at the last "@" before the path: a password's own "@" must be %40.
        let authorityEnd = rest.firstIndex(of: "/") ?? rest.endIndex
        if rest[authorityEnd...].contains("@") {
            throw RedisURLError("a \"/\" or \"@\" in the user or password must be percent-encoded (%2F, %40)")
        }
        hosts = rest[..<authorityEnd]
        path = rest[authorityEnd...]
        if let at = hosts.lastIndex(of: "@") {
            (user, password) = try RedisEndpoint.parseUserInfo(hosts[..<at])
            hosts = hosts[hosts.index(after: at)...]
        }
    }

    /// Whether `text`'s scheme (in any case) is `tls` (true) or `plain` (false); nil for another.
    static func usesTLS(_ text: String, plain: String, tls: String) -> Bool? {
        guard let separator = text.firstRange(of: "://") else { return nil }
        switch text[..<separator.lowerBound].lowercased() {
        case plain: return false
        case tls: return true
        default: return nil
        }
    }
}
