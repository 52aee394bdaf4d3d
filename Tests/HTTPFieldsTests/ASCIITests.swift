import HTTPFields
import XCTest

final class ASCIITests: XCTestCase {
    private func bytes(_ text: String, _ body: (UnsafeRawBufferPointer) -> Void) {
        Array(text.utf8).withUnsafeBytes(body)
    }

    func testLowercasedChangesOnlyUppercaseLetters() {
        XCTAssertEqual(ASCII.lowercased(UInt8(ascii: "A")), UInt8(ascii: "a"))
        XCTAssertEqual(ASCII.lowercased(UInt8(ascii: "Z")), UInt8(ascii: "z"))
        XCTAssertEqual(ASCII.lowercased(UInt8(ascii: "@")), UInt8(ascii: "@"))
        XCTAssertEqual(ASCII.lowercased(UInt8(ascii: "[")), UInt8(ascii: "["))
        XCTAssertEqual(ASCII.lowercased(0xC4), 0xC4)
    }

    func testEqualsIgnoringCaseComparesWholeNames() {
        bytes("Content-Length") { name in
            XCTAssertTrue(ASCII.equalsIgnoringCase(name, Array("content-length".utf8)))
            XCTAssertFalse(ASCII.equalsIgnoringCase(name, Array("content-lengt".utf8)))
            bytes("CONTENT-LENGTH") { other in XCTAssertTrue(ASCII.equalsIgnoringCase(name, other)) }
            bytes("CONTENT_LENGTH") { other in XCTAssertFalse(ASCII.equalsIgnoringCase(name, other)) }
        }
    }

    func testListElementsAreTrimmedAndEmptyOnesSkipped() {
        var elements: [String] = []
        bytes(" keep-alive ,,\tUpgrade ,") { value in
            ASCII.forEachListElement(value) { elements.append(String(decoding: $0, as: UTF8.self)) }
        }
        XCTAssertEqual(elements, ["keep-alive", "Upgrade"])
    }

    func testTokensAndFieldValues() {
        XCTAssertTrue(ASCII.isToken("X-Request-Id"))
        XCTAssertFalse(ASCII.isToken("X Request"))
        XCTAssertFalse(ASCII.isToken(""))
        XCTAssertTrue(ASCII.isFieldValue("a\tb c"))
        XCTAssertFalse(ASCII.isFieldValue("a\r\nb"))
        XCTAssertFalse(ASCII.isFieldValue("a\u{7F}"))
    }

    func testPathCharacterClasses() {
        XCTAssertTrue(ASCII.isUnreserved(UInt8(ascii: "~")))
        XCTAssertFalse(ASCII.isUnreserved(UInt8(ascii: "!")))
        XCTAssertTrue(ASCII.isPathCharacter(UInt8(ascii: "@")))
        XCTAssertFalse(ASCII.isPathCharacter(UInt8(ascii: "?")))
        XCTAssertFalse(ASCII.isPathCharacter(UInt8(ascii: "%")))
    }
}
