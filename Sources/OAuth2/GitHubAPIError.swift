/// An error answer of GitHub's REST API (`{"message": "Not Found", "documentation_url": "…"}`),
/// as an installation token request gets it: 401 for an App JWT GitHub could not verify or
/// whose times it refused, 404 for an installation the App does not have, 403 and 422 for
/// repositories or permissions the installation cannot give, 403 or 429 for a rate limit. Its
/// texts are GitHub's, cleaned of any secret the request carried (`ErrorText.clean`).
public struct GitHubAPIError: Sendable, Equatable, CustomStringConvertible {
    public var status: Int
    /// GitHub's `message` (cut to `ErrorText.limit` bytes); nil for a rate limit whose body is no
    /// GitHub error object, which only its headers tell.
    public var message: String?
    /// GitHub's `documentation_url`, if it gave one.
    public var documentationURL: String?
    /// A rate limit (primary or secondary): a 403 or 429 with `Retry-After`, with
    /// `x-ratelimit-remaining: 0`, or whose message says so. It passes, so it is temporary.
    public var isRateLimit: Bool

    public init(status: Int, message: String?, documentationURL: String? = nil, isRateLimit: Bool = false) {
        self.status = status
        self.message = message
        self.documentationURL = documentationURL
        self.isRateLimit = isRateLimit
    }

    public var description: String {
        guard let message else { return "a rate limit by its headers, without GitHub's error object" }
        return "GitHub's message \"\(message)\"" + (documentationURL.map { " (documentation: \($0))" } ?? "")
    }
}
