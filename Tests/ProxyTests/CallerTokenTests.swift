import Crypto
import OAuth2
@testable import Proxy
import XCTest

/// The caller's token on a route whose identity exchanges it: the one `Authorization: Bearer` of
/// the request (RFC 6750 §2.1), and the answers a caller gets when there is none, or when the
/// token endpoint refused it.
final class CallerTokenTests: XCTestCase {
    private func bearer(_ value: String) -> String? {
        Array(value.utf8).withUnsafeBytes { CallerToken.bearerToken(in: $0).map { String(decoding: $0, as: UTF8.self) } }
    }

    func testTheBearerTokenIsTakenInAnyCaseOfTheScheme() {
        XCTAssertEqual(bearer("Bearer abc.DEF-123_~+/=="), "abc.DEF-123_~+/==")
        XCTAssertEqual(bearer("bearer abc"), "abc")
        XCTAssertEqual(bearer("BEARER   abc"), "abc")
    }

    func testAnythingElseIsNoBearerToken() {
        for value in ["", "Bearer", "Bearer ", "Bearer   ", "Bearerabc", "Basic dXNlcjpwYXNz", "Bearer\tabc", "DPoP abc"] {
            XCTAssertNil(bearer(value), value)
        }
    }

    func testATokenIsWellFormedOnlyAsAB64Token() {
        for token in ["abc", "abc.DEF-123_~+/==", "a", "abc="] {
            XCTAssertTrue(CallerToken(value: token, digest: [], expiresAt: nil).isWellFormed, token)
        }
        for token in ["a b", "a=b", "=abc", "abc,def", "\"abc\"", "abc\u{e9}", "=", ""] {
            XCTAssertFalse(CallerToken(value: token, digest: [], expiresAt: nil).isWellFormed, token)
        }
    }

    func testEveryByteIsJudgedByTheRFCsList() {
        let allowed = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~+/".utf8)
        for byte in UInt8.min...UInt8.max {
            let token = [UInt8(ascii: "a"), byte, UInt8(ascii: "z")]
            XCTAssertEqual(token.withUnsafeBytes { CallerToken.isB64Token($0) }, allowed.contains(byte), "byte \(byte)")
        }
    }

    func testTheKeyIsTheDigestOfTheTokenNotTheToken() {
        let token = CallerToken(value: "abc", digest: SHA256.hash(Array("abc".utf8)), expiresAt: nil)
        let same = CallerToken(value: "abc", digest: SHA256.hash(Array("abc".utf8)), expiresAt: 1_700_000_000)
        let other = CallerToken(value: "abd", digest: SHA256.hash(Array("abd".utf8)), expiresAt: nil)
        XCTAssertNotNil(token.key)
        XCTAssertEqual(token.key, same.key)
        XCTAssertNotEqual(token.key, other.key)
    }

    func testNoBearerTokenIsChallengedWithoutAnErrorCode() {
        let problem = Problem.callerTokenMissing(route: "orders-api")
        XCTAssertEqual(problem.status, 401)
        XCTAssertEqual(problem.slug, "caller-token-missing")
        XCTAssertEqual(problem.extraHeaders.map(\.0), ["WWW-Authenticate"])
        XCTAssertEqual(problem.extraHeaders.first?.1, #"Bearer realm="oauth-relay""#)
    }

    func testARefusedCallerIsChallengedWithTheIdPsError() {
        let refused = CallerRefusal(.oauth(OAuthError(code: .invalidGrant, errorDescription: "revoked"), status: 400, retryAfter: nil),
                                    identity: "orders")
        let problem = Problem.tokenUnavailable(refused.problem, route: "orders-api")
        XCTAssertEqual(problem.status, 401)
        XCTAssertEqual(problem.slug, "caller-token-refused")
        XCTAssertEqual(problem.oauthError, "invalid_grant")
        XCTAssertEqual(problem.oauthErrorDescription, "revoked")
        XCTAssertEqual(problem.extraHeaders.first { $0.0 == "WWW-Authenticate" }?.1, #"Bearer realm="oauth-relay", error="invalid_token""#)
        let forbidden = CallerRefusal(.oauth(OAuthError(code: .invalidScope), status: 400, retryAfter: nil), identity: "orders")
        let answer = Problem.tokenUnavailable(forbidden.problem, route: "orders-api")
        XCTAssertEqual(answer.status, 403)
        XCTAssertEqual(answer.extraHeaders.first { $0.0 == "WWW-Authenticate" }?.1, #"Bearer realm="oauth-relay", error="insufficient_scope""#)
        XCTAssertTrue(answer.json().contains(#""oauthError":"invalid_scope""#))
    }
}
