import HTTPFields
import JSON
import SafeText

/// GitHub's answer to an installation token request (`POST …/access_tokens`), which is not
/// OAuth's: `201` with `{"token": "ghs_…", "expires_at": "2026-11-26T23:14:10Z", "permissions":
/// {…}, "repository_selection": "…"}`, the token's lifetime being `expires_at` less now; or
/// GitHub's error object (`GitHubAPIError`). Like every token answer: a redirect is never
/// followed, and no text quoted in an error holds a secret the request carried (the App JWT).
///
/// Temporary, as for OAuth: 5xx, 408 and 429; and GitHub's rate limits, which may come as a 403
/// (GitHub's "Rate limits for the REST API"): with `Retry-After`, wait that long; with
/// `x-ratelimit-remaining: 0`, until `x-ratelimit-reset` (seconds since 1970); a message that
/// names a rate limit with neither, at least a minute.
enum GitHubTokenAnswer {
    /// The members of a success that the relay reads.
    static let tokenMember = "token"
    static let expiryMember = "expires_at"

    /// How such answers are read: GitHub's names (so `ErrorText.excerpt` never quotes a body
    /// naming `token`).
    static let format = TokenResponseFormat(shape: .gitHubInstallationToken,
                                            fields: ResponseFields(token: ResponseMember(stringLiteral: tokenMember),
                                                                   expiry: ResponseMember(stringLiteral: expiryMember)))

    /// How long to wait after a rate limit that says nothing of when it ends.
    static let rateLimitWaitSeconds: Double = 60

    static func parse(_ reply: TokenEndpointReply, secrets: [String], unixTime: Double) throws(TokenEndpointError) -> TokenResponse {
        let status = reply.status
        if (300..<400).contains(status) {
            throw .redirect(status: status, location: reply.header("Location").map { ErrorText.location($0, removing: secrets) })
        }
        let members = reply.body.isEmpty ? nil : (try? JSONValue(parsing: reply.body))?.dictionary
        guard (200..<300).contains(status) else {
            throw error(of: reply, members: members, secrets: secrets, unixTime: unixTime)
        }
        func invalid(_ reason: String) -> TokenEndpointError {
            .invalidTokenResponse(status: status, contentType: reply.mediaType, reason: reason)
        }
        guard let members else {
            throw invalid(reply.body.isEmpty ? "the body is empty" : "the body is not a JSON object")
        }
        let token: String
        do throws(UnusableAnswer) {
            (token, _) = try TokenResponse.token(in: members, at: format.fields.token)
        } catch {
            throw invalid(error.reason)
        }
        guard let expiry = members[expiryMember] else {
            throw invalid("no expires_at field: GitHub says when every installation token expires")
        }
        guard let text = expiry.string, let expiresAt = RFC3339Time.seconds(text) else {
            throw invalid("expires_at is not an RFC 3339 date-time such as 2026-11-26T23:14:10Z")
        }
        guard expiresAt > unixTime else {
            throw invalid("expires_at is not in the future: the token has already expired")
        }
        let lifetime = TokenLifetime.until(expiresAt - unixTime, field: expiryMember)
        var response = TokenResponse(accessToken: Secret(token), expiresIn: lifetime.seconds, expirySource: .expiresAt)
        response.lifetimeWarnings = lifetime.warnings
        return response
    }

    /// The error a status other than 2xx and 3xx is: GitHub's error object when the body is one
    /// (a JSON object with a `message` string), else the status with an excerpt of the body. A
    /// 403 or 429 whose headers say it is a rate limit (`Retry-After`, `x-ratelimit-remaining: 0`)
    /// is one whatever its body (a proxy's page, an empty body): it passes.
    private static func error(of reply: TokenEndpointReply, members: [String: JSONValue]?, secrets: [String],
                              unixTime: Double) -> TokenEndpointError {
        let retryAfter = reply.header("Retry-After").flatMap { RetryAfter.seconds($0, unixTime: unixTime) }
        let limitSpent = reply.header("x-ratelimit-remaining").map { WhiteSpace.trimmingSpaces($0) == "0" } ?? false
        let mayBeRateLimit = [403, 429].contains(reply.status)
        let message = members?["message"]?.string
        let isRateLimit = mayBeRateLimit
            && (retryAfter != nil || limitSpent || message?.lowercased().contains("rate limit") == true)
        guard message != nil || isRateLimit else {
            return .unexpectedStatus(status: reply.status, contentType: reply.mediaType,
                                     excerpt: ErrorText.excerpt(of: reply, format: format, removing: secrets), retryAfter: retryAfter)
        }
        let error = GitHubAPIError(status: reply.status, message: message.map { ErrorText.clean($0, removing: secrets) },
                                   documentationURL: members?["documentation_url"]?.string.map { ErrorText.clean($0, removing: secrets) },
                                   isRateLimit: isRateLimit)
        guard isRateLimit, retryAfter == nil else { return .gitHubAPI(error, retryAfter: retryAfter) }
        let reset = limitSpent ? reply.header("x-ratelimit-reset").flatMap { UInt64(WhiteSpace.trimmingSpaces($0)) } : nil
        return .gitHubAPI(error, retryAfter: reset.map { max(0, Double($0) - unixTime) } ?? rateLimitWaitSeconds)
    }
}
