@testable import Crypto
import XCTest

/// The signing state a worker keeps for DPoP proofs: its signatures are the same kind of
/// signature `PrivateKey.signature` makes (they verify with the public key), for every
/// algorithm, and for many messages in a row.
final class SigningContextTests: XCTestCase {
    private static let rsa = try! PrivateKey.generate(.rsa(bits: 2048))
    private static let ec = try! PrivateKey.generate(.ecP256)
    private static let ed25519 = try! PrivateKey.generate(.ed25519)

    private func sign(_ message: [UInt8], with context: SigningContext) throws -> [UInt8] {
        var out: [UInt8] = [0xAA]  // appended to, not replaced
        try message.withUnsafeBytes { try context.sign($0, appendingTo: &out) }
        XCTAssertEqual(out.first, 0xAA)
        return Array(out.dropFirst())
    }

    func testSignaturesVerifyForEveryAlgorithm() throws {
        let cases: [(PrivateKey, SignatureAlgorithm, Int?)] = [
            (Self.ec, .ecdsaP256SHA256, 64), (Self.rsa, .rsaPKCS1v15SHA256, 256), (Self.rsa, .rsaPSSSHA256, 256),
            (Self.ed25519, .ed25519, 64),
        ]
        for (key, algorithm, length) in cases {
            let context = try SigningContext(key: key, algorithm: algorithm)
            for index in 0..<20 {
                let message = Array("header.payload-\(index)".utf8)
                let signature = try sign(message, with: context)
                XCTAssertEqual(signature.count, length, "\(algorithm)")
                XCTAssertTrue(key.publicKey.isValidSignature(signature, for: message, algorithm: algorithm), "\(algorithm) #\(index)")
                XCTAssertFalse(key.publicKey.isValidSignature(signature, for: message + [0], algorithm: algorithm), "\(algorithm)")
            }
        }
    }

    func testPSSSignaturesUseADigestLongSalt() throws {
        // A PSS signature with another salt length does not verify under RFC 7518's parameters,
        // which `isValidSignature` insists on; and two signatures of one message differ (random salt).
        let context = try SigningContext(key: Self.rsa, algorithm: .rsaPSSSHA256)
        let message = Array("same message".utf8)
        let first = try sign(message, with: context), second = try sign(message, with: context)
        XCTAssertNotEqual(first, second)
        XCTAssertTrue(Self.rsa.publicKey.isValidSignature(second, for: message, algorithm: .rsaPSSSHA256))
    }

    func testAnAlgorithmThatDoesNotFitTheKeyIsRefused() {
        XCTAssertThrowsError(try SigningContext(key: Self.rsa, algorithm: .ecdsaP256SHA256)) { error in
            XCTAssertEqual(error as? CryptoError, .algorithmMismatch("ECDSA P-256 SHA-256 with an RSA 2048 key"))
        }
    }

    func testECDSADERIsReadIntoFixedSizeComponents() {
        // r with a leading zero (its high bit set), s shorter than 32 bytes.
        let r = [0x00] + [UInt8](repeating: 0x81, count: 32)
        let s = [UInt8](repeating: 0x05, count: 30)
        let der: [UInt8] = [0x30, UInt8(2 + r.count + 2 + s.count), 0x02, UInt8(r.count)] + r + [0x02, UInt8(s.count)] + s
        var out: [UInt8] = [1, 2]
        XCTAssertTrue(ECDSASignature.appendRaw(fromDER: der[...], to: &out))
        XCTAssertEqual(out, [1, 2] + [UInt8](repeating: 0x81, count: 32) + [0, 0] + s)
    }

    func testMalformedECDSADERIsRefusedAndAppendsNothing() {
        let good: [UInt8] = [0x30, 0x06, 0x02, 0x01, 0x01, 0x02, 0x01, 0x02]
        var out: [UInt8] = []
        XCTAssertTrue(ECDSASignature.appendRaw(fromDER: good[...], to: &out))
        let bad: [[UInt8]] = [
            [], [0x31, 0x06, 0x02, 0x01, 0x01, 0x02, 0x01, 0x02],   // not a SEQUENCE
            [0x30, 0x07, 0x02, 0x01, 0x01, 0x02, 0x01, 0x02],       // length past the end
            [0x30, 0x06, 0x02, 0x01, 0x01, 0x02, 0x02, 0x02],       // integer past the end
            [0x30, 0x05, 0x02, 0x01, 0x01, 0x02, 0x00],             // empty integer
            [0x30, 0x06, 0x02, 0x01, 0x01, 0x04, 0x01, 0x02],       // not an INTEGER
            [0x30, 0x25, 0x02, 0x21] + [UInt8](repeating: 1, count: 33) + [0x02, 0x00],  // 33 significant bytes
        ]
        for der in bad {
            var out: [UInt8] = [9]
            XCTAssertFalse(ECDSASignature.appendRaw(fromDER: der[...], to: &out), "\(der)")
            XCTAssertEqual(out, [9], "\(der)")
        }
    }
}

/// The worker's random source for `jti`s: CSPRNG bytes handed out once each, across refills.
final class BufferedSecureRandomTests: XCTestCase {
    func testNumbersDifferAcrossRefills() {
        let random = BufferedSecureRandom()
        // 4 KiB holds 512 numbers: 2,000 cross three refills.
        let numbers = (0..<2_000).map { _ in random.next() }
        XCTAssertEqual(Set(numbers).count, numbers.count)
        XCTAssertTrue(numbers.contains { $0 >> 56 != 0 }, "all eight bytes are used")
    }
}
