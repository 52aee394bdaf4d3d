import Endpoints
import OAuth2
import XCTest

/// Error answers of token endpoints: RFC 6749 §5.2 and what real IdPs send instead.
final class TokenEndpointErrorTests: XCTestCase {
    func testOAuthErrorResponseIsParsed() {
        let error = parseError(reply(400, #"""
        {"error":"invalid_grant","error_description":"The refresh token has expired","error_uri":"https://idp/errors#grant"}
        """#))
        XCTAssertEqual(error, .oauth(OAuthError(code: .invalidGrant, errorDescription: "The refresh token has expired",
                                                errorURI: "https://idp/errors#grant"), status: 400, retryAfter: nil))
        XCTAssertEqual(error?.isTemporary, false)
        XCTAssertEqual(error?.code, "invalid_grant")
    }

    func testEveryStandardErrorCodeIsKnown() {
        let codes = ["invalid_request", "invalid_client", "invalid_grant", "unauthorized_client", "unsupported_grant_type",
                     "invalid_scope", "access_denied", "unsupported_response_type", "server_error", "temporarily_unavailable",
                     "invalid_target", "authorization_pending", "slow_down", "expired_token", "invalid_dpop_proof", "use_dpop_nonce"]
        for code in codes {
            let parsed = OAuthErrorCode(code)
            XCTAssertNotEqual(parsed, .other(code), code)
            XCTAssertEqual(parsed.rawValue, code)
        }
    }

    func testUnknownErrorCodeIsKept() {
        let error = parseError(reply(400, #"{"error":"tenant_disabled"}"#))
        XCTAssertEqual(error?.oauthError?.code, .other("tenant_disabled"))
        XCTAssertEqual(error?.code, "tenant_disabled")
    }

    func testAnUnknownErrorCodeIsTheMetricLabelIdpError() {
        let error = parseError(reply(400, #"{"error":"tenant_disabled_for_user_4711"}"#))
        XCTAssertEqual(error?.metricLabel, "idp_error", "an IdP's own text must not become a label value")
        XCTAssertEqual(OAuthErrorCode("x\u{1}anything").metricLabel, "idp_error")
        XCTAssertEqual(OAuthErrorCode("access_denied").metricLabel, "access_denied")
        XCTAssertEqual(TokenEndpointError.oauth(OAuthError(code: .expiredToken), status: 400, retryAfter: nil).metricLabel, "expired_token")
        XCTAssertEqual(TokenEndpointError.timedOut(seconds: 3).metricLabel, "timeout", "errors that are not OAuth answers keep their code")
    }

    func testInvalidClientWith401IsARefusal() {
        let error = parseError(reply(401, #"{"error":"invalid_client"}"#, headers: [("WWW-Authenticate", "Basic")]))
        XCTAssertEqual(error?.oauthError?.code, .invalidClient)
        XCTAssertEqual(error?.status, 401)
        XCTAssertEqual(error?.isTemporary, false)
    }

    func testOAuthErrorInA200IsStillAnError() {
        XCTAssertEqual(parseError(reply(200, #"{"error":"invalid_scope"}"#))?.oauthError?.code, .invalidScope)
    }

    func testTemporaryOAuthErrorsAndStatusesAreTemporary() {
        XCTAssertEqual(parseError(reply(400, #"{"error":"temporarily_unavailable"}"#))?.isTemporary, true)
        XCTAssertEqual(parseError(reply(500, #"{"error":"invalid_request"}"#))?.isTemporary, true)
    }

    func testEmptyBodyIsABareStatus() {
        let error = parseError(reply(400, "", contentType: nil))
        XCTAssertEqual(error, .unexpectedStatus(status: 400, contentType: nil, excerpt: nil, retryAfter: nil))
        XCTAssertEqual(error?.description, "the token endpoint answered HTTP 400 (no content type) without an OAuth error")
    }

    func testHTMLPageIsQuotedAsItsText() {
        let html = """
        <!DOCTYPE html><html><head><title>403 Forbidden</title><style>body { color: red }</style>
        <script>var x = "<b>";</script></head><body><h1>Request blocked</h1><!-- waf id 7 --></body></html>
        """
        let error = parseError(reply(403, html, contentType: "text/html; charset=UTF-8"))
        XCTAssertEqual(error, .unexpectedStatus(status: 403, contentType: "text/html", excerpt: "403 Forbidden Request blocked", retryAfter: nil))
        XCTAssertEqual(error?.isTemporary, false)
    }

    func testScriptsAndCommentsEndWhateverTheCaseOfTheirEndTag() {
        let html = "<HTML><SCRIPT>var t = '<b>';</Script>Service <!-- x --->down<STYLE>p {}</STYLE></HTML>"
        XCTAssertEqual(excerpt(of: parseError(reply(503, html, contentType: "text/html"))), "Service down")
    }

    func testAnUnclosedScriptEndsTheText() {
        XCTAssertEqual(excerpt(of: parseError(reply(503, "<p>Down</p><script>var a = 1;", contentType: "text/html"))), "Down")
    }

    private func excerpt(of error: TokenEndpointError?) -> String? {
        guard case .unexpectedStatus(_, _, let excerpt, _)? = error else { return nil }
        return excerpt
    }

    func testNonJSONServerErrorIsTemporaryAndQuoted() {
        let error = parseError(reply(502, "upstream connect error\r\n", contentType: "text/plain"))
        XCTAssertEqual(error, .unexpectedStatus(status: 502, contentType: "text/plain", excerpt: "upstream connect error", retryAfter: nil))
        XCTAssertEqual(error?.isTemporary, true)
        XCTAssertEqual(error?.code, "http_502")
    }

    func testJSONWithoutAnOAuthErrorIsQuoted() {
        let error = parseError(reply(400, #"{"message":"bad tenant"}"#))
        XCTAssertEqual(error, .unexpectedStatus(status: 400, contentType: "application/json", excerpt: #"{"message":"bad tenant"}"#,
                                                retryAfter: nil))
    }

    func testExcerptIsAtMost200Bytes() throws {
        let error = parseError(reply(500, String(repeating: "é", count: 500), contentType: "text/plain"))
        guard case .unexpectedStatus(_, _, let excerpt?, _) = error else { return XCTFail("\(String(describing: error))") }
        XCTAssertLessThanOrEqual(excerpt.dropLast().utf8.count, 200)
        XCTAssertTrue(excerpt.hasSuffix("…"))
    }

    func testBodyThatCouldHoldATokenIsNeverQuoted() {
        for body in [#"{"access_token":"leaked-token","expires_in":60}"#, "<p>refresh_token=abc</p>"] {
            let error = parseError(reply(500, body, contentType: "text/html"))
            XCTAssertEqual(error, .unexpectedStatus(status: 500, contentType: "text/html", excerpt: nil, retryAfter: nil), body)
        }
    }

    func testSecretsTheRequestCarriedAreRemovedFromQuotedText() {
        let error = parseError(reply(400, #"{"error":"invalid_client","error_description":"bad secret s3cret-value\n"}"#),
                               secrets: ["s3cret-value"])
        XCTAssertEqual(error?.oauthError?.errorDescription, "bad secret …")
        let page = parseError(reply(400, "debug: client_secret=s3cret-value", contentType: "text/plain"), secrets: ["s3cret-value"])
        XCTAssertFalse(String(describing: page).contains("s3cret-value"))
    }

    func testRedirectIsAnErrorShowingWhereWithoutItsQuery() {
        let error = parseError(reply(302, "", contentType: nil, headers: [("Location", "https://login.example.com/authorize?code=c0de#x")]))
        XCTAssertEqual(error, .redirect(status: 302, location: "https://login.example.com/authorize"))
        XCTAssertEqual(error?.isTemporary, false)
        XCTAssertFalse(String(describing: error).contains("c0de"))
    }

    func testTooManyRequestsWithRetryAfterSeconds() {
        let error = parseError(reply(429, "", contentType: nil, headers: [("Retry-After", "30")]))
        XCTAssertEqual(error?.retryAfter, 30)
        XCTAssertEqual(error?.isTemporary, true)
    }

    func testRetryAfterAsAnHTTPDateInEachFormat() {
        // unixTime 1_700_000_000 is Tue, 14 Nov 2023 22:13:20 GMT.
        for date in ["Tue, 14 Nov 2023 22:14:00 GMT", "Tuesday, 14-Nov-23 22:14:00 GMT", "Tue Nov 14 22:14:00 2023"] {
            let error = parseError(reply(503, "", contentType: nil, headers: [("Retry-After", date)]), unixTime: 1_700_000_000)
            XCTAssertEqual(error?.retryAfter, 40, date)
        }
    }

    func testRetryAfterInThePastIsZeroAndGarbageIsIgnored() {
        let past = parseError(reply(503, "", contentType: nil, headers: [("Retry-After", "Sun, 06 Nov 1994 08:49:37 GMT")]))
        XCTAssertEqual(past?.retryAfter, 0)
        let garbage = parseError(reply(503, "", contentType: nil, headers: [("Retry-After", "soon")]))
        XCTAssertNil(garbage?.retryAfter)
    }

    func testSuccessWithoutAJSONBodyIsAnInvalidResponseThatQuotesNothing() {
        XCTAssertEqual(parseError(reply(200, "<html>ok token abc</html>", contentType: "text/html")),
                       .invalidTokenResponse(status: 200, contentType: "text/html", reason: "the body is not a JSON object"))
        XCTAssertEqual(parseError(reply(200, "", contentType: nil)),
                       .invalidTokenResponse(status: 200, contentType: nil, reason: "the body is empty"))
    }

    func testSuccessWithoutAnAccessTokenNamesTheFieldsItHas() {
        XCTAssertEqual(parseError(reply(200, #"{"token":"t","expires":60}"#)),
                       .invalidTokenResponse(status: 200, contentType: "application/json", reason: "no access_token field (fields: expires, token)"))
    }

    func testAccessTokenThatCannotGoInAHeaderIsRejected() {
        for token in [#""a\r\nX-Injected: 1""#, #""two words""#, "42", #""""#] {
            guard case .invalidTokenResponse? = parseError(reply(200, #"{"access_token":\#(token)}"#)) else {
                return XCTFail(token)
            }
        }
    }

    func testExpiredJWTIsRejected() {
        let jwt = makeJWT(#"{"exp":1699999999}"#)
        XCTAssertEqual(parseError(reply(200, #"{"access_token":"\#(jwt)"}"#), unixTime: 1_700_000_000),
                       .invalidTokenResponse(status: 200, contentType: "application/json", reason: "the token is a JWT whose exp has already passed"))
    }

    func testTransportFailuresAreTemporary() {
        XCTAssertTrue(TokenEndpointError.unreachable(reason: "connection refused").isTemporary)
        XCTAssertTrue(TokenEndpointError.timedOut(seconds: 5).isTemporary)
        XCTAssertEqual(TokenEndpointError.timedOut(seconds: 5).description, "the token endpoint did not answer within 5 s")
        XCTAssertNil(TokenEndpointError.unreachable(reason: "x").status)
    }

    func testDescriptionsSayWhatTheEndpointAnswered() {
        XCTAssertEqual(TokenEndpointError.oauth(OAuthError(code: .invalidClient, errorDescription: "unknown client"), status: 401,
                                                retryAfter: nil).description,
                       "the token endpoint answered HTTP 401 with OAuth error invalid_client (unknown client)")
        XCTAssertEqual(TokenEndpointError.unexpectedStatus(status: 503, contentType: "text/html", excerpt: "Down", retryAfter: 2.5).description,
                       #"the token endpoint answered HTTP 503 (text/html) without an OAuth error, Retry-After 2.5 s: "Down""#)
    }
}
