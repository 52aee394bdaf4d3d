import SafeText
import XCTest

/// A secret shows at most its last four characters, however it is printed.
final class SecretTests: XCTestCase {
    func testShortSecretIsFullyRedacted() {
        let secret = Secret("hunter2")
        XCTAssertEqual(secret.description, "…")
        XCTAssertEqual(secret.debugDescription, "…")
        XCTAssertEqual("\(secret)", "…")
    }

    func testLongSecretShowsOnlyItsLastFourCharacters() {
        let secret = Secret("0123456789abcdefWXYZ")
        XCTAssertEqual(secret.description, "…WXYZ")
        XCTAssertEqual(Secret("0123456789abcdef").description, "…cdef")
        XCTAssertEqual(Secret("0123456789abcde").description, "…")
    }

    func testValueGivesTheSecret() {
        XCTAssertEqual(Secret("hunter2").value, "hunter2")
    }
}
