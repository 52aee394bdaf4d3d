import Glibc
import Tokens
import XCTest

final class IssuedAtTests: XCTestCase {
    /// A server reading a coarse or slightly slower clock must never see a JWT from its future:
    /// the relay's `iat` is a second behind the wall clock's current second.
    func testIsOneSecondBehindTheWallClock() {
        let before = Int64(time(nil))
        let issuedAt = IssuedAt.now()
        let after = Int64(time(nil))
        XCTAssertGreaterThanOrEqual(issuedAt, before - 1)
        XCTAssertLessThanOrEqual(issuedAt, after - 1)
    }
}
