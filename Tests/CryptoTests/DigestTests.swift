import Crypto
import XCTest

final class DigestTests: XCTestCase {
    func testSHA256OfABC() {
        XCTAssertEqual(hex(SHA256.hash(Array("abc".utf8))), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        XCTAssertEqual(hex(SHA256.hash([])), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }

    /// RFC 4231 test case 2.
    func testHMACSHA256OfRFC4231Case2() throws {
        let code = try HMACSHA256.authenticationCode(for: Array("what do ya want for nothing?".utf8), key: SymmetricKey(Array("Jefe".utf8)))
        XCTAssertEqual(hex(code), "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }

    func testHMACValidationRefusesAnyOtherCode() throws {
        let key = SymmetricKey(Array("Jefe".utf8))
        let message = Array("message".utf8)
        var code = try HMACSHA256.authenticationCode(for: message, key: key)
        XCTAssertTrue(HMACSHA256.isValid(code, for: message, key: key))
        XCTAssertFalse(HMACSHA256.isValid(code.dropLast(), for: message, key: key))
        code[0] ^= 1
        XCTAssertFalse(HMACSHA256.isValid(code, for: message, key: key))
    }

    func testAnEmptyHMACKeyIsRefused() {
        XCTAssertThrowsError(try HMACSHA256.authenticationCode(for: [1], key: SymmetricKey([])))
    }

    func testSecureRandomGivesDistinctBytesOfTheLengthAsked() throws {
        let first = try SecureRandom.bytes(32)
        XCTAssertEqual(first.count, 32)
        XCTAssertNotEqual(first, try SecureRandom.bytes(32))
        var generator = SecureRandomNumberGenerator()
        XCTAssertEqual(generator.bytes(13).count, 13)
        XCTAssertNotEqual(generator.next(), generator.next())
    }

    func testConstantTimeEqualityComparesLengthAndBytes() {
        XCTAssertTrue(ConstantTime.equal([1, 2], [1, 2]))
        XCTAssertFalse(ConstantTime.equal([1, 2], [1, 3]))
        XCTAssertFalse(ConstantTime.equal([1, 2], [1, 2, 3]))
        XCTAssertTrue(ConstantTime.equal([], []))
    }
}
