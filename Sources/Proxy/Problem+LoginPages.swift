// The login pages' answers (LoginPages), written as the relay's own: the pages decide, the
// connection writes them as it writes any local answer.

import LoginPages

extension Problem {
    /// A login page's answer: its HTML page, no body (a redirect), or its own problem.
    init(_ answer: LoginAnswer) {
        switch answer.body {
        case .page(let page):
            self.init(status: answer.status, slug: "", title: answer.reason, detail: page.title)
            self.page = page
        case .none:
            self.init(status: answer.status, slug: "", title: answer.reason, detail: "")
        case .problem(let slug, let detail):
            self.init(status: answer.status, slug: slug, title: answer.reason, detail: detail)
        }
        extraHeaders = answer.fields
    }

    /// This `login-required` problem of `identity` as the login pages make it useful for
    /// `request` (`LoginEndpoints.loginRequired`): a browser's redirect or page instead, or the
    /// problem naming the URL that starts the login.
    func loginRequired(by logins: LoginEndpoints, identity: String, request: LoginRequest, at now: Double) -> Problem {
        switch logins.loginRequired(identity: identity, request: request, problemFields: extraHeaders, at: now) {
        case nil:
            return self
        case .answer(let answer)?:
            return Problem(answer)
        case .problem(let url, let field)?:
            var problem = self
            problem.loginUrl = url
            problem.extraHeaders.append(field)
            return problem
        }
    }
}
