/// What a login page answers: a status line, fields, and a body. Proxy writes it as one of the
/// relay's own answers (its `Problem`), so a login page's bytes are those of any local answer:
/// `Cache-Control: no-store`, `Via`, `Connection: close` when the connection ends.
public struct LoginAnswer: Sendable {
    public enum Body: Sendable {
        /// A page for a person (`text/html`).
        case page(LoginPage)
        /// No body: a redirect (its `Location` among the fields).
        case none
        /// A problem document (`application/problem+json`) with this slug and detail, titled
        /// with the reason phrase: a request the pages do not take (a method other than GET and HEAD).
        case problem(slug: String, detail: String)
    }

    public let status: Int
    /// The reason phrase (a problem's title).
    public let reason: String
    public let body: Body
    /// Fields besides those every local answer carries.
    public internal(set) var fields: [(String, String)]
}

/// What becomes of the 401 `login-required` problem of a route's request whose identity needs a
/// person to log in (`LoginEndpoints.loginRequired`).
public enum LoginNeeded: Sendable {
    /// A browser's request: answered instead by a redirect to the login, or, right after a failed
    /// one, a page saying why.
    case answer(LoginAnswer)
    /// Any other client's: the problem, naming the URL that starts the login (`loginUrl`) and
    /// carrying `field` (`WWW-Authenticate`).
    case problem(loginURL: String, field: (String, String))
}
