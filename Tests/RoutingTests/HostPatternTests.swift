import Routing
import XCTest

final class HostPatternTests: XCTestCase {
    func testHostPatternsParse() {
        XCTAssertEqual(HostPattern(parsing: "Orders.Local."), .exact("orders.local"))
        XCTAssertEqual(HostPattern(parsing: "*.example.com"), .wildcard(suffix: "example.com"))
        XCTAssertEqual(HostPattern(parsing: "[::1]"), .exact("::1"))
        for text in ["*", "a.*.com", "*example.com", "orders.local:8080", "", "a..b"] {
            XCTAssertNil(HostPattern(parsing: text), text)
        }
    }

    func testInvalidPatternsSayWhy() {
        XCTAssertThrowsError(try HostPattern.parse("orders.local:8080")) { error in
            XCTAssertTrue((error as? HostPattern.SyntaxError)?.message.contains("no port") ?? false, "\(error)")
        }
        XCTAssertThrowsError(try HostPattern.parse("a.*.com")) { error in
            XCTAssertTrue((error as? HostPattern.SyntaxError)?.message.contains("leftmost") ?? false, "\(error)")
        }
    }

    /// A combining mark after the bracket is no IPv6 address: the brackets are read as bytes, and
    /// the address between them too (not "::1" with the mark dropped along with the "[").
    func testACombiningMarkInsideTheBracketsIsRefused() {
        for text in ["[\u{301}::1]", "[::1\u{301}]", "[\u{301}]"] {
            XCTAssertThrowsError(try HostPattern.parse(text), text.debugDescription) { error in
                XCTAssertEqual((error as? HostPattern.SyntaxError)?.message, "\"\(text)\" is not an IPv6 address", text.debugDescription)
            }
        }
    }

    func testPatternsPrintAsWritten() {
        XCTAssertEqual(HostPattern.exact("::1").description, "[::1]")
        XCTAssertEqual(HostPattern.wildcard(suffix: "example.com").description, "*.example.com")
    }
}
