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

    func testPatternsPrintAsWritten() {
        XCTAssertEqual(HostPattern.exact("::1").description, "[::1]")
        XCTAssertEqual(HostPattern.wildcard(suffix: "example.com").description, "*.example.com")
    }
}
