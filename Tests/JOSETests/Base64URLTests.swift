import JOSE
import XCTest

final class Base64URLTests: JOSETestCase {
    func testEncodesRFC4648VectorsWithoutPadding() {
        let vectors = ["": "", "f": "Zg", "fo": "Zm8", "foo": "Zm9v", "foob": "Zm9vYg", "fooba": "Zm9vYmE", "foobar": "Zm9vYmFy"]
        for (plain, encoded) in vectors {
            XCTAssertEqual(Base64URL.encode(Array(plain.utf8)), encoded)
            XCTAssertEqual(Base64URL.decode(encoded), Array(plain.utf8))
        }
    }

    func testUsesTheURLSafeAlphabet() {
        XCTAssertEqual(Base64URL.encode([0xFB, 0xFF, 0xBF]), "-_-_")
        XCTAssertEqual(Base64URL.decode("-_-_"), [0xFB, 0xFF, 0xBF])
    }

    func testRefusesPaddingAndTheStandardAlphabet() {
        XCTAssertNil(Base64URL.decode("Zg=="))
        XCTAssertNil(Base64URL.decode("Zm8="))
        XCTAssertNil(Base64URL.decode("+/+/"))
    }

    func testRefusesWhitespaceAndOtherBytes() {
        XCTAssertNil(Base64URL.decode("Zm9v Yg"))
        XCTAssertNil(Base64URL.decode("Zm9v\nYg"))
        XCTAssertNil(Base64URL.decode("Zm9v.Yg"))
        XCTAssertNil(Base64URL.decode("Zm9vYgé"))
    }

    func testRefusesALengthNoEncodingHas() {
        XCTAssertNil(Base64URL.decode("Z"))
        XCTAssertNil(Base64URL.decode("Zm9vY"))
    }

    func testRefusesNonZeroUnusedBits() {
        XCTAssertEqual(Base64URL.decode("QQ"), [0x41])
        XCTAssertNil(Base64URL.decode("QR"))
        XCTAssertNil(Base64URL.decode("QUF"))  // "QUE" is the only text for "AA"
    }

    func testDecodingAnEncodingGivesTheBytesBack() {
        var random = SystemRandomNumberGenerator()
        for count in 0..<70 {
            let bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) }
            XCTAssertEqual(Base64URL.decode(Base64URL.encode(bytes)), bytes)
        }
    }
}
