import HTTPFields
import XCTest

final class PercentDecodingTests: XCTestCase {
    func testEscapesInEitherCaseBecomeTheirBytes() {
        XCTAssertEqual(PercentDecoding.bytes("a%2fb%2F%41+"), Array("a/b/A+".utf8))
        XCTAssertEqual(PercentDecoding.string("my%20app%C3%A9"), "my appé")
    }

    func testAPercentWithoutTwoHexDigitsMakesTheTextInvalid() {
        for text: Substring in ["%", "a%2", "%zz", "%2g", "100%"] {
            XCTAssertNil(PercentDecoding.bytes(text), String(text))
        }
    }

    func testTextThatIsNoUTF8OnceDecodedIsNoString() {
        XCTAssertEqual(PercentDecoding.bytes("%FF"), [0xFF])
        XCTAssertNil(PercentDecoding.string("%FF"))
    }
}
