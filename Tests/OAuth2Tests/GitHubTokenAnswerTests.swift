import OAuth2
import SafeText
import XCTest

/// GitHub's answer to an installation token request: the token and the lifetime its
/// `expires_at` gives, every way that answer can be unusable, and GitHub's error answers with
/// which of them pass (rate limits, 5xx) and which do not.
final class GitHubTokenAnswerTests: XCTestCase {
    /// 2027-01-15T08:00:00Z.
    private let now: Double = 1_800_000_000
    private let format = TokenResponseFormat(shape: .gitHubInstallationToken)

    private func parsed(_ reply: TokenEndpointReply, secrets: [String] = [], file: StaticString = #filePath, line: UInt = #line) throws -> TokenResponse {
        do {
            return try TokenResponse.parse(reply, format: format, secrets: secrets, unixTime: now)
        } catch {
            XCTFail("expected a token, got \(error)", file: file, line: line)
            throw error
        }
    }

    private func failure(_ reply: TokenEndpointReply, secrets: [String] = [], file: StaticString = #filePath, line: UInt = #line) -> TokenEndpointError? {
        do {
            let token = try TokenResponse.parse(reply, format: format, secrets: secrets, unixTime: now)
            XCTFail("expected an error, got \(token)", file: file, line: line)
            return nil
        } catch {
            return error
        }
    }

    /// A 201 with `token` and `expires_at` (raw JSON values) and GitHub's other members.
    private func created(token: String = #""ghs_16C7e42F292c6912E7710c838347Ae178B4a""#, expiresAt: String?) -> TokenEndpointReply {
        let expiry = expiresAt.map { #","expires_at":\#($0)"# } ?? ""
        return reply(201, #"{"token":\#(token)\#(expiry),"permissions":{"issues":"write","contents":"read"},"#
                     + #""repository_selection":"selected","repositories":[{"id":1296269,"name":"Hello-World"}]}"#)
    }

    func testTheTokenLivesUntilExpiresAt() throws {
        let response = try parsed(created(expiresAt: #""2027-01-15T09:00:00Z""#))
        XCTAssertEqual(response.accessToken, Secret("ghs_16C7e42F292c6912E7710c838347Ae178B4a"))
        XCTAssertEqual(response.tokenType, "Bearer")
        XCTAssertEqual(response.expiresIn, 3600)
        XCTAssertEqual(response.expirySource, .expiresAt)
        XCTAssertNil(response.refreshToken)
        XCTAssertEqual(response.lifetimeWarnings, [])
        XCTAssertFalse(response.description.contains("ghs_16C7e42F292c"), response.description)
    }

    func testExpiresAtInEveryFormRFC3339Allows() throws {
        let cases: [(String, Double)] = [
            ("2027-01-15T08:00:10Z", 10),
            ("2027-01-15T08:00:10.250Z", 10.25),
            ("2027-01-15t08:00:10z", 10),
            ("2027-01-15T09:00:10+01:00", 10),
            ("2027-01-15T07:30:10-00:30", 10),
            ("2027-02-28T08:00:00Z", 44 * 86_400),
            ("2027-01-15T08:00:60Z", 60),
        ]
        for (text, seconds) in cases {
            XCTAssertEqual(try parsed(created(expiresAt: "\"\(text)\"")).expiresIn, seconds, accuracy: 0.000_1, text)
        }
    }

    func testAnExpiresAtThatIsNotAnRFC3339DateTimeIsRefused() {
        let notDates = ["2027-01-15 09:00:00Z", "2027-01-15T09:00Z", "2027-01-15T09:00:00", "2027-01-15T09:00:00+0100",
                        "2027-1-15T09:00:00Z", "2027-02-29T09:00:00Z", "2027-13-01T09:00:00Z", "2027-01-15T24:00:00Z",
                        "2027-01-15T09:00:00.Z", "2027-01-15T09:00:00Z ", "1800003600", "", "tomorrow"]
        for text in notDates {
            XCTAssertEqual(failure(created(expiresAt: "\"\(text)\"")),
                           .invalidTokenResponse(status: 201, contentType: "application/json",
                                                 reason: "expires_at is not an RFC 3339 date-time such as 2026-11-26T23:14:10Z"), text)
        }
        for value in ["1800003600", "null", "true", #"["2027-01-15T09:00:00Z"]"#] {
            XCTAssertEqual(failure(created(expiresAt: value)),
                           .invalidTokenResponse(status: 201, contentType: "application/json",
                                                 reason: "expires_at is not an RFC 3339 date-time such as 2026-11-26T23:14:10Z"), value)
        }
    }

    func testAnAnswerWithoutExpiresAtOrWithOneNotInTheFutureIsRefused() {
        XCTAssertEqual(failure(created(expiresAt: nil)),
                       .invalidTokenResponse(status: 201, contentType: "application/json",
                                             reason: "no expires_at field: GitHub says when every installation token expires"))
        for past in ["2027-01-15T08:00:00Z", "2027-01-15T07:59:59Z", "2016-07-11T22:14:10Z"] {
            XCTAssertEqual(failure(created(expiresAt: "\"\(past)\"")),
                           .invalidTokenResponse(status: 201, contentType: "application/json",
                                                 reason: "expires_at is not in the future: the token has already expired"), past)
        }
    }

    func testALeapDayIsADayOnlyInALeapYear() throws {
        XCTAssertEqual(try parsed(created(expiresAt: #""2028-02-29T08:00:00Z""#)).expiresIn, 365 * 24 * 3600, "a year away, so cut to one")
        XCTAssertNotNil(failure(created(expiresAt: #""2027-02-29T08:00:00Z""#)))
    }

    func testALifetimeBeyondAYearIsCutAndAShortOneWarned() throws {
        let far = try parsed(created(expiresAt: #""2099-01-01T00:00:00Z""#))
        XCTAssertEqual(far.expiresIn, 365 * 24 * 3600)
        XCTAssertEqual(far.lifetimeWarnings, [.capped(field: "expires_at")])
        let soon = try parsed(created(expiresAt: #""2027-01-15T08:00:00.5Z""#))
        XCTAssertEqual(soon.expiresIn, 0.5, accuracy: 0.000_1)
        XCTAssertEqual(soon.lifetimeWarnings, [.shorterThanRefreshInterval(field: "expires_at")])
    }

    func testAMissingOrUnusableTokenIsRefused() {
        let expiresAt = #","expires_at":"2027-01-15T09:00:00Z"}"#
        let cases: [(String, String)] = [
            (#"{"expires_at":"2027-01-15T09:00:00Z","permissions":{}}"#, "no token field (fields: expires_at, permissions)"),
            (#"{"token":null"# + expiresAt, "token is not a non-empty string"),
            (#"{"token":""# + "\"" + expiresAt, "token is not a non-empty string"),
            (#"{"token":42"# + expiresAt, "token is not a non-empty string"),
            (#"{"token":{"value":"ghs_x"}"# + expiresAt, "token is not a non-empty string"),
            (#"{"token":"ghs_a b"# + "\"" + expiresAt,
             "token holds characters that cannot go in a header (spaces, control or non-ASCII characters)"),
            (#"{"access_token":"ghs_x","expires_in":3600}"#, "no token field (fields: access_token, expires_in)"),
        ]
        for (body, reason) in cases {
            XCTAssertEqual(failure(reply(201, body)), .invalidTokenResponse(status: 201, contentType: "application/json", reason: reason), body)
        }
        XCTAssertEqual(failure(reply(201, "")), .invalidTokenResponse(status: 201, contentType: "application/json", reason: "the body is empty"))
        XCTAssertEqual(failure(reply(201, "token=ghs_x", contentType: "application/x-www-form-urlencoded")),
                       .invalidTokenResponse(status: 201, contentType: "application/x-www-form-urlencoded", reason: "the body is not a JSON object"))
        XCTAssertEqual(failure(reply(201, #"["ghs_x"]"#)),
                       .invalidTokenResponse(status: 201, contentType: "application/json", reason: "the body is not a JSON object"))
    }

    func testGitHubsErrorsAreRefusalsWithItsMessageAndDocumentation() {
        let cases: [(Int, String, String)] = [
            (401, "A JSON web token could not be decoded", "https://docs.github.com/rest"),
            (401, "'Expiration time' claim ('exp') is too far in the future", "https://docs.github.com/rest"),
            (404, "Not Found", "https://docs.github.com/rest/apps/apps#create-an-installation-access-token-for-an-app"),
            (403, "Resource not accessible by integration", "https://docs.github.com/rest/apps/apps#create-an-installation-access-token-for-an-app"),
            (422, "There is at least one repository that does not exist or is not accessible to the parent installation.",
             "https://docs.github.com/rest/apps/apps#create-an-installation-access-token-for-an-app"),
        ]
        for (status, message, documentation) in cases {
            let error = failure(reply(status, #"{"message":"\#(message)","documentation_url":"\#(documentation)","status":"\#(status)"}"#))
            XCTAssertEqual(error, .gitHubAPI(GitHubAPIError(status: status, message: message, documentationURL: documentation), retryAfter: nil))
            XCTAssertEqual(error?.isTemporary, false, message)
            XCTAssertEqual(error?.code, "http_\(status)")
        }
        XCTAssertEqual(failure(reply(404, #"{"message":"Not Found","documentation_url":"https://docs.github.com/rest"}"#))?.description,
                       #"the token endpoint answered HTTP 404: GitHub's message "Not Found" (documentation: https://docs.github.com/rest)"#)
        XCTAssertEqual(failure(reply(422, #"{"message":"Validation Failed"}"#))?.description,
                       #"the token endpoint answered HTTP 422: GitHub's message "Validation Failed""#)
    }

    func testRateLimitsAndServerErrorsPassAndSayWhenToAskAgain() {
        let secondary = #"{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again.","documentation_url":"https://docs.github.com/rest"}"#
        let withRetryAfter = failure(reply(403, secondary, headers: [("Retry-After", "30")]))
        XCTAssertEqual(withRetryAfter?.retryAfter, 30)
        XCTAssertEqual(withRetryAfter?.isTemporary, true)
        XCTAssertEqual(withRetryAfter?.description,
                       "the token endpoint answered HTTP 403, Retry-After 30 s: GitHub's message \"You have exceeded a secondary rate limit. "
                       + "Please wait a few minutes before you try again.\" (documentation: https://docs.github.com/rest)")
        // A secondary limit that says nothing of when: at least a minute (GitHub's advice).
        XCTAssertEqual(failure(reply(403, secondary))?.retryAfter, 60)
        XCTAssertEqual(failure(reply(403, secondary))?.isTemporary, true)
        // The primary limit: until x-ratelimit-reset.
        let primary = failure(reply(403, #"{"message":"API rate limit exceeded for installation ID 678."}"#,
                                    headers: [("x-ratelimit-remaining", "0"), ("x-ratelimit-reset", "1800000090")]))
        XCTAssertEqual(primary?.retryAfter, 90)
        XCTAssertEqual(primary?.isTemporary, true)
        XCTAssertEqual(failure(reply(429, #"{"message":"Too many requests"}"#))?.isTemporary, true)
        XCTAssertEqual(failure(reply(502, #"{"message":"Server Error"}"#, headers: [("Retry-After", "5")]))?.retryAfter, 5)
        XCTAssertEqual(failure(reply(502, #"{"message":"Server Error"}"#))?.isTemporary, true)
        // A 403 that is no rate limit is a refusal, whatever x-ratelimit-remaining says.
        let forbidden = failure(reply(403, #"{"message":"Resource not accessible by integration"}"#, headers: [("x-ratelimit-remaining", "4999")]))
        XCTAssertEqual(forbidden?.isTemporary, false)
        XCTAssertNil(forbidden?.retryAfter)
    }

    /// The rate-limit headers decide before the body: a 403 or 429 from a proxy, or with an empty
    /// body, still passes when they say so.
    func testARateLimitWithoutGitHubsErrorObjectIsKnownByItsHeaders() {
        let page = "<html><body>Too many requests</body></html>"
        let primary = failure(reply(403, page, contentType: "text/html",
                                    headers: [("x-ratelimit-remaining", "0"), ("x-ratelimit-reset", "1800000120")]))
        XCTAssertEqual(primary, .gitHubAPI(GitHubAPIError(status: 403, message: nil, isRateLimit: true), retryAfter: 120))
        XCTAssertEqual(primary?.isTemporary, true)
        XCTAssertEqual(primary?.description,
                       "the token endpoint answered HTTP 403, Retry-After 120 s: a rate limit by its headers, without GitHub's error object")
        let secondary = failure(reply(403, "", headers: [("Retry-After", "45")]))
        XCTAssertEqual(secondary, .gitHubAPI(GitHubAPIError(status: 403, message: nil, isRateLimit: true), retryAfter: 45))
        XCTAssertEqual(failure(reply(429, "", headers: [("x-ratelimit-remaining", "0")]))?.retryAfter, 60)
        // Without those headers a 403 that is no error object stays a refusal.
        let forbidden = failure(reply(403, page, contentType: "text/html", headers: [("x-ratelimit-remaining", "12")]))
        XCTAssertEqual(forbidden?.isTemporary, false)
        XCTAssertNil(forbidden?.retryAfter)
    }

    func testAnswersThatAreNotGitHubsErrorObjectKeepTheirStatus() {
        let page = failure(reply(503, "<html><body><h1>Unicorn!</h1></body></html>", contentType: "text/html", headers: [("Retry-After", "7")]))
        XCTAssertEqual(page, .unexpectedStatus(status: 503, contentType: "text/html", excerpt: "Unicorn!", retryAfter: 7))
        XCTAssertEqual(page?.isTemporary, true)
        XCTAssertEqual(failure(reply(400, #"{"error":"bad"}"#)),
                       .unexpectedStatus(status: 400, contentType: "application/json", excerpt: #"{"error":"bad"}"#, retryAfter: nil))
        // A body that may hold a token is never quoted.
        XCTAssertEqual(failure(reply(500, #"{"token":"ghs_secret"}"#)),
                       .unexpectedStatus(status: 500, contentType: "application/json", excerpt: nil, retryAfter: nil))
        XCTAssertEqual(failure(reply(301, "", headers: [("Location", "https://api.github.com/moved?jwt=x")])),
                       .redirect(status: 301, location: "https://api.github.com/moved"))
    }

    func testSecretsTheRequestCarriedAreNeverQuoted() {
        let error = failure(reply(401, #"{"message":"bad JWT eyJhbGciOiJSUzI1NiJ9.e30.c2ln","documentation_url":"https://x/eyJhbGciOiJSUzI1NiJ9.e30.c2ln"}"#),
                            secrets: ["eyJhbGciOiJSUzI1NiJ9.e30.c2ln"])
        XCTAssertEqual(error, .gitHubAPI(GitHubAPIError(status: 401, message: "bad JWT …", documentationURL: "https://x/…"), retryAfter: nil))
    }
}
