import Crypto
@testable import Proxy
import Tokens
import XCTest

/// The tokens a route verified: kept by SHA-256 until their expiry, at most `maxTokens` of them,
/// the least recently used forgotten first.
final class CheckedCallersTests: XCTestCase {
    private func caller(_ token: String, validUntil: Int64 = 2_000) -> (TokenDigest, CheckedCaller) {
        let digest = SHA256.hash(Array(token.utf8))
        return (TokenDigest(digest), CheckedCaller(token: CallerToken(value: token, digest: digest, expiresAt: validUntil - 60),
                                                   standing: .admitted, claimLines: [], validUntil: validUntil))
    }

    func testACheckedTokenIsFoundByItsDigestUntilItExpires() {
        let callers = CheckedCallers(capacity: 10)
        let (key, checked) = caller("t1", validUntil: 2_000)
        callers.remember(checked, under: key)
        XCTAssertTrue(callers.caller(key, at: 1_999) === checked)
        XCTAssertNil(callers.caller(caller("t2").0, at: 1_000), "another token")
        XCTAssertNil(callers.caller(key, at: 2_000), "expired at validUntil")
        XCTAssertEqual(callers.count, 0, "an expired entry is forgotten when found")
        XCTAssertNil(callers.caller(key, at: 1_000), "and stays forgotten")
    }

    func testTheBoundHoldsAndTheLeastRecentlyUsedGoesFirst() {
        let callers = CheckedCallers(capacity: 3)
        let entries = (1...3).map { caller("t\($0)") }
        for (key, checked) in entries { callers.remember(checked, under: key) }
        XCTAssertNotNil(callers.caller(entries[0].0, at: 1_000), "t1 used: t2 is now the least recent")
        let (key4, checked4) = caller("t4")
        callers.remember(checked4, under: key4)
        XCTAssertEqual(callers.count, 3)
        XCTAssertNil(callers.caller(entries[1].0, at: 1_000), "t2 forgotten")
        XCTAssertNotNil(callers.caller(entries[0].0, at: 1_000))
        XCTAssertNotNil(callers.caller(entries[2].0, at: 1_000))
        XCTAssertNotNil(callers.caller(key4, at: 1_000))
        for index in 5...1_000 {
            let (key, checked) = caller("t\(index)")
            callers.remember(checked, under: key)
        }
        XCTAssertEqual(callers.count, 3, "flat past the bound")
    }

    func testDigestsCompareByAllTheirBytes() {
        var a = [UInt8](repeating: 0, count: 32), b = a
        b[31] = 1
        XCTAssertNotEqual(TokenDigest(a), TokenDigest(b))
        a[31] = 1
        XCTAssertEqual(TokenDigest(a), TokenDigest(b))
    }
}
