import HTTPFields
import XCTest

final class WhiteSpaceTests: XCTestCase {
    func testSpacesAreTabsAndUnicodeSpaceSeparators() {
        XCTAssertEqual(WhiteSpace.trimmingSpaces(" \t\u{A0}3600\u{2003} "), "3600")
        XCTAssertEqual(WhiteSpace.trimmingSpaces("a b"), "a b")
    }

    func testLineBreaksAreNoSpacesButAreTrimmedWithNewlines() {
        XCTAssertEqual(WhiteSpace.trimmingSpaces("\nkey\r\n"), "\nkey\r\n")
        XCTAssertEqual(WhiteSpace.trimmingSpacesAndNewlines("\u{FEFF}key"), "\u{FEFF}key", "a byte order mark is no space")
        XCTAssertEqual(WhiteSpace.trimmingSpacesAndNewlines(" \nkey\r\n\u{2028}\u{85}"), "key")
    }

    func testOnlySpacesTrimToEmpty() {
        XCTAssertEqual(WhiteSpace.trimmingSpaces(" \t "), "")
        XCTAssertEqual(WhiteSpace.trimmingSpacesAndNewlines(""), "")
    }
}
