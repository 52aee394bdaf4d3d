import Crypto
import XCTest

final class AESGCMTests: XCTestCase {
    private let key = SymmetricKey([UInt8](repeating: 7, count: 32))
    private let associatedData = Array("identity=orders;v=1;fp=abc".utf8)
    private let plaintext = Array(#"{"access_token":"t","refresh_token":"r"}"#.utf8)

    /// The GCM specification's test case 14 (AES-256, zero key and IV, one zero block).
    func testMatchesTheGCMSpecificationTestCase14() throws {
        let box = try AESGCM.seal([UInt8](repeating: 0, count: 16), key: SymmetricKey([UInt8](repeating: 0, count: 32)),
                                  nonce: [UInt8](repeating: 0, count: 12))
        XCTAssertEqual(hex(box.ciphertext), "cea7403d4d606b6e074ec5d3baf39d18")
        XCTAssertEqual(hex(box.tag), "d0d1c8a799996bf0265b98b5d48ab919")
    }

    func testSealedDataOpensWithTheSameKeyAndAssociatedData() throws {
        let box = try AESGCM.seal(plaintext, key: key, authenticating: associatedData)
        XCTAssertEqual(try AESGCM.open(box, key: key, authenticating: associatedData), plaintext)
        XCTAssertNotEqual(box.ciphertext, plaintext)
    }

    func testTheCombinedFormRoundTrips() throws {
        let box = try AESGCM.seal(plaintext, key: key, authenticating: associatedData)
        XCTAssertEqual(box.combined.count, 12 + plaintext.count + 16)
        XCTAssertEqual(try AESGCM.open(AESGCM.SealedBox(combined: box.combined), key: key, authenticating: associatedData), plaintext)
    }

    func testAnEmptyPlaintextRoundTrips() throws {
        let box = try AESGCM.seal([], key: key, authenticating: associatedData)
        XCTAssertEqual(try AESGCM.open(box, key: key, authenticating: associatedData), [])
    }

    func testEverySealDrawsAFreshNonce() throws {
        let nonces = try (0..<20).map { _ in try AESGCM.seal(plaintext, key: key).nonce }
        XCTAssertEqual(Set(nonces).count, 20)
    }

    func testATamperedCiphertextDoesNotOpen() throws {
        let box = try AESGCM.seal(plaintext, key: key, authenticating: associatedData)
        var ciphertext = box.ciphertext
        ciphertext[3] ^= 1
        let tampered = try AESGCM.SealedBox(nonce: box.nonce, ciphertext: ciphertext, tag: box.tag)
        XCTAssertThrowsError(try AESGCM.open(tampered, key: key, authenticating: associatedData)) {
            XCTAssertEqual($0 as? CryptoError, .authenticationFailed)
        }
    }

    func testATamperedTagDoesNotOpen() throws {
        let box = try AESGCM.seal(plaintext, key: key, authenticating: associatedData)
        var tag = box.tag
        tag[15] ^= 0x80
        let tampered = try AESGCM.SealedBox(nonce: box.nonce, ciphertext: box.ciphertext, tag: tag)
        XCTAssertThrowsError(try AESGCM.open(tampered, key: key, authenticating: associatedData)) {
            XCTAssertEqual($0 as? CryptoError, .authenticationFailed)
        }
    }

    /// An entry copied onto another identity's file: the associated data differs.
    func testOtherAssociatedDataDoesNotOpen() throws {
        let box = try AESGCM.seal(plaintext, key: key, authenticating: associatedData)
        XCTAssertThrowsError(try AESGCM.open(box, key: key, authenticating: Array("identity=billing;v=1;fp=abc".utf8))) {
            XCTAssertEqual($0 as? CryptoError, .authenticationFailed)
        }
        XCTAssertThrowsError(try AESGCM.open(box, key: key)) { XCTAssertEqual($0 as? CryptoError, .authenticationFailed) }
    }

    func testATamperedNonceOrAnotherKeyDoesNotOpen() throws {
        let box = try AESGCM.seal(plaintext, key: key, authenticating: associatedData)
        var nonce = box.nonce
        nonce[0] ^= 1
        XCTAssertThrowsError(try AESGCM.open(AESGCM.SealedBox(nonce: nonce, ciphertext: box.ciphertext, tag: box.tag),
                                             key: key, authenticating: associatedData))
        XCTAssertThrowsError(try AESGCM.open(box, key: SymmetricKey([UInt8](repeating: 8, count: 32)), authenticating: associatedData))
    }

    func testWrongLengthsAreRefused() {
        XCTAssertThrowsError(try AESGCM.seal(plaintext, key: SymmetricKey([UInt8](repeating: 1, count: 16)))) {
            XCTAssertEqual($0 as? CryptoError, .invalidLength("an AES-256 key is 32 bytes"))
        }
        XCTAssertThrowsError(try AESGCM.seal(plaintext, key: key, nonce: [1, 2, 3]))
        XCTAssertThrowsError(try AESGCM.SealedBox(combined: [UInt8](repeating: 0, count: 27)))
    }

    func testKeysDescribeThemselvesWithoutTheirBytes() {
        XCTAssertEqual("\(key)", "SymmetricKey(32 bytes, redacted)")
        XCTAssertEqual(String(reflecting: key), "SymmetricKey(32 bytes, redacted)")
    }
}

func hex(_ bytes: [UInt8]) -> String {
    bytes.map { String(format: "%02x", $0) }.joined()
}
