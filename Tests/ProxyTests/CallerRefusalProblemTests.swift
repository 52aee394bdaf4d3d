import Crypto
import OAuth2
@testable import Proxy
import Tokens
import XCTest

/// What a caller is told when the token endpoint would not exchange its token (`CallerRefusal`),
/// and the key its token is cached by.
final class CallerRefusalProblemTests: XCTestCase {
    func testARefusedCallerIsChallengedWithTheIdPsError() {
        let refused = CallerRefusal(.oauth(OAuthError(code: .invalidGrant, errorDescription: "revoked"), status: 400, retryAfter: nil),
                                    identity: "orders")
        let problem = Problem.tokenUnavailable(refused.problem, route: "orders-api")
        XCTAssertEqual(problem.status, 401)
        XCTAssertEqual(problem.slug, "caller-token-refused")
        XCTAssertEqual(problem.oauthError, "invalid_grant")
        XCTAssertEqual(problem.oauthErrorDescription, "revoked")
        XCTAssertEqual(problem.extraHeaders.first { $0.0 == "WWW-Authenticate" }?.1, #"Bearer realm="oauth-relay", error="invalid_token""#)
    }

    func testACallerTheIdPWillNotServeIsForbidden() {
        let forbidden = CallerRefusal(.oauth(OAuthError(code: .invalidScope), status: 400, retryAfter: nil), identity: "orders")
        let answer = Problem.tokenUnavailable(forbidden.problem, route: "orders-api")
        XCTAssertEqual(answer.status, 403)
        XCTAssertEqual(answer.slug, "caller-not-permitted")
        XCTAssertEqual(answer.extraHeaders.first { $0.0 == "WWW-Authenticate" }?.1, #"Bearer realm="oauth-relay", error="insufficient_scope""#)
        XCTAssertTrue(answer.json().contains(#""oauthError":"invalid_scope""#))
    }

    func testAnOutageIs503WithRetryAfterAndNoChallenge() {
        let outage = CallerRefusal(.unexpectedStatus(status: 503, contentType: nil, excerpt: nil, retryAfter: 4), identity: "orders")
        let answer = Problem.tokenUnavailable(outage.problem, route: "orders-api")
        XCTAssertEqual(answer.status, 503)
        XCTAssertEqual(answer.extraHeaders.map(\.0), ["Retry-After"])
        XCTAssertEqual(answer.extraHeaders.first?.1, "4")
    }

    func testTheKeyIsTheDigestOfTheTokenNotTheToken() {
        let token = CallerToken(value: "abc", digest: SHA256.hash(Array("abc".utf8)), expiresAt: nil)
        let same = CallerToken(value: "abc", digest: SHA256.hash(Array("abc".utf8)), expiresAt: 1_700_000_000)
        let other = CallerToken(value: "abd", digest: SHA256.hash(Array("abd".utf8)), expiresAt: nil)
        XCTAssertNotNil(token.key)
        XCTAssertEqual(token.key, same.key)
        XCTAssertNotEqual(token.key, other.key)
        XCTAssertNil(CallerToken(value: "abc", digest: [1, 2, 3], expiresAt: nil).key)
    }
}
