import Crypto
import Foundation
import Synchronization
import XCTest

/// Keys made by the `openssl` command in a temporary directory, and keys generated in-process.
final class SigningKeyTests: XCTestCase {
    private var directory = ""
    private var liveKeysBefore = 0
    private let message = Array("header.payload".utf8)

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("oauth-relay-keys-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        liveKeysBefore = PrivateKey.liveKeys
    }

    /// Every test is also a leak check: each OpenSSL key it made has been freed.
    override func tearDown() {
        XCTAssertEqual(PrivateKey.liveKeys, liveKeysBefore, "OpenSSL keys left alive")
        try? FileManager.default.removeItem(atPath: directory)
    }

    private func openssl(_ arguments: String...) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl"] + arguments
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw OpenSSLCommandError(message: "openssl \(arguments.joined(separator: " ")) failed") }
    }

    private func read(_ file: String) throws -> String {
        try String(contentsOfFile: "\(directory)/\(file)", encoding: .utf8)
    }

    private func write(_ bytes: [UInt8], to file: String) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: "\(directory)/\(file)"))
    }

    func testReadsPEMKeysOfEveryKindTheOpenSSLCommandWrites() throws {
        try openssl("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", "rsa.pem")
        try openssl("genrsa", "-traditional", "-out", "rsa-traditional.pem", "2048")
        try openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "ec.pem")
        try openssl("genpkey", "-algorithm", "ED25519", "-out", "ed25519.pem")
        let expected: [(String, KeyKind)] = [("rsa.pem", .rsa(bits: 2048)), ("rsa-traditional.pem", .rsa(bits: 2048)),
                                             ("ec.pem", .ecP256), ("ed25519.pem", .ed25519)]
        for (file, kind) in expected {
            XCTAssertEqual(try PrivateKey(pem: read(file)).kind, kind, file)
            try openssl("pkey", "-in", file, "-pubout", "-out", "\(file).pub")
            XCTAssertEqual(try PublicKey(pem: read("\(file).pub")), try PrivateKey(pem: read(file)).publicKey, file)
        }
    }

    func testRSASignaturesVerifyWithTheOpenSSLCommand() throws {
        try openssl("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", "rsa.pem")
        try openssl("pkey", "-in", "rsa.pem", "-pubout", "-out", "rsa.pub")
        let key = try PrivateKey(pem: read("rsa.pem"))
        try write(message, to: "message")
        try write(key.signature(for: message, algorithm: .rsaPKCS1v15SHA256), to: "pkcs1.sig")
        try openssl("dgst", "-sha256", "-verify", "rsa.pub", "-signature", "pkcs1.sig", "message")
        try write(key.signature(for: message, algorithm: .rsaPSSSHA256), to: "pss.sig")
        try openssl("dgst", "-sha256", "-verify", "rsa.pub", "-sigopt", "rsa_padding_mode:pss", "-sigopt", "rsa_pss_saltlen:32",
                    "-signature", "pss.sig", "message")
    }

    func testSignaturesOfTheOpenSSLCommandVerify() throws {
        try openssl("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", "rsa.pem")
        try openssl("pkey", "-in", "rsa.pem", "-pubout", "-out", "rsa.pub")
        try write(message, to: "message")
        try openssl("dgst", "-sha256", "-sign", "rsa.pem", "-out", "message.sig", "message")
        let signature = Array(try Data(contentsOf: URL(fileURLWithPath: "\(directory)/message.sig")))
        let key = try PublicKey(pem: read("rsa.pub"))
        XCTAssertTrue(key.isValidSignature(signature, for: message, algorithm: .rsaPKCS1v15SHA256))
        XCTAssertFalse(key.isValidSignature(signature, for: message + [0], algorithm: .rsaPKCS1v15SHA256))
    }

    func testRefusesEncryptedWeakAndOtherCurveKeys() throws {
        try openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-aes256", "-pass", "pass:secret",
                    "-out", "encrypted.pem")
        try openssl("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:1024", "-out", "rsa1024.pem")
        try openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384", "-out", "p384.pem")
        XCTAssertThrowsError(try PrivateKey(pem: read("encrypted.pem"))) { error in
            guard case .unreadableKey? = error as? CryptoError else { return XCTFail("\(error)") }
        }
        XCTAssertThrowsError(try PrivateKey(pem: read("rsa1024.pem"))) {
            XCTAssertEqual($0 as? CryptoError, .unsupportedKey("RSA keys must have 2048 to 16384 bits, this one has 1024"))
        }
        XCTAssertThrowsError(try PrivateKey(pem: read("p384.pem"))) {
            XCTAssertEqual($0 as? CryptoError, .unsupportedKey("EC keys must be on P-256, this one is on secp384r1"))
        }
        XCTAssertThrowsError(try PrivateKey(pem: "not a key"))
        XCTAssertThrowsError(try PublicKey(pem: read("p384.pem")))
    }

    func testErrorsNeverShowTheKeyText() throws {
        try openssl("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:1024", "-out", "rsa1024.pem")
        let pem = try read("rsa1024.pem")
        let body = pem.split(separator: "\n")[1]
        XCTAssertThrowsError(try PrivateKey(pem: pem)) { XCTAssertFalse("\($0)".contains(body)) }
        XCTAssertThrowsError(try PrivateKey(pem: String(pem.dropLast(40)))) { XCTAssertFalse("\($0)".contains(body)) }
    }

    func testEveryAlgorithmSignsAndVerifiesWithAFittingKey() throws {
        let keys: [(PrivateKey, SignatureAlgorithm)] = [
            (try .generate(.rsa(bits: 2048)), .rsaPKCS1v15SHA256), (try .generate(.rsa(bits: 2048)), .rsaPSSSHA256),
            (try .generate(.ecP256), .ecdsaP256SHA256), (try .generate(.ed25519), .ed25519),
        ]
        for (key, algorithm) in keys {
            let signature = try key.signature(for: message, algorithm: algorithm)
            XCTAssertTrue(key.publicKey.isValidSignature(signature, for: message, algorithm: algorithm), "\(algorithm)")
            XCTAssertFalse(key.publicKey.isValidSignature(signature, for: message + [1], algorithm: algorithm), "\(algorithm)")
            var tampered = signature
            tampered[tampered.count / 2] ^= 1
            XCTAssertFalse(key.publicKey.isValidSignature(tampered, for: message, algorithm: algorithm), "\(algorithm)")
        }
    }

    func testECDSASignaturesAreSixtyFourRawBytes() throws {
        let key = try PrivateKey.generate(.ecP256)
        for _ in 0..<20 {
            let signature = try key.signature(for: message, algorithm: .ecdsaP256SHA256)
            XCTAssertEqual(signature.count, 64)
            XCTAssertFalse(key.publicKey.isValidSignature(signature + [0], for: message, algorithm: .ecdsaP256SHA256))
        }
    }

    func testAnAlgorithmThatDoesNotFitTheKeyIsRefused() throws {
        let key = try PrivateKey.generate(.ecP256)
        XCTAssertThrowsError(try key.signature(for: message, algorithm: .rsaPKCS1v15SHA256)) {
            XCTAssertEqual($0 as? CryptoError, .algorithmMismatch("RSASSA-PKCS1-v1_5 SHA-256 with an EC P-256 key"))
        }
        let signature = try key.signature(for: message, algorithm: .ecdsaP256SHA256)
        XCTAssertFalse(key.publicKey.isValidSignature(signature, for: message, algorithm: .ed25519))
    }

    func testPublicKeysRoundTripThroughTheirComponents() throws {
        for kind in [KeyKind.rsa(bits: 2048), .ecP256, .ed25519] {
            let key = try PrivateKey.generate(kind).publicKey
            let rebuilt = try PublicKey(components: key.components())
            XCTAssertEqual(rebuilt, key)
            XCTAssertEqual(rebuilt.kind, kind)
        }
    }

    func testPrivateKeysRoundTripThroughPEM() throws {
        let key = try PrivateKey.generate(.ecP256)
        let read = try PrivateKey(pem: key.pemRepresentation())
        XCTAssertEqual(read.publicKey, key.publicKey)
        XCTAssertNotEqual(read.publicKey, try PrivateKey.generate(.ecP256).publicKey)
    }

    func testInvalidComponentsAreRefused() throws {
        guard case .ecP256(let x, var y) = try PrivateKey.generate(.ecP256).publicKey.components() else { return XCTFail() }
        y[31] ^= 1
        XCTAssertThrowsError(try PublicKey(components: .ecP256(x: x, y: y)))
        XCTAssertThrowsError(try PublicKey(components: .ecP256(x: x, y: Array(y.dropFirst()))))
        guard case .rsa(let modulus, _) = try PrivateKey.generate(.rsa(bits: 2048)).publicKey.components() else { return XCTFail() }
        XCTAssertThrowsError(try PublicKey(components: .rsa(modulus: modulus, exponent: [1, 0, 0]))) {
            XCTAssertEqual($0 as? CryptoError, .invalidKeyParameters("an RSA exponent must be odd and greater than 1"))
        }
        XCTAssertThrowsError(try PublicKey(components: .rsa(modulus: modulus, exponent: [0, 1])))
        XCTAssertThrowsError(try PublicKey(components: .ed25519(x: [1, 2, 3])))
    }

    func testKeysDescribeThemselvesWithoutKeyMaterial() throws {
        let key = try PrivateKey.generate(.ecP256)
        XCTAssertEqual("\(key)", "PrivateKey(EC P-256, redacted)")
        XCTAssertEqual("\(key.publicKey)", "PublicKey(EC P-256)")
    }
}

/// One key signs and verifies from many threads at once (a DPoP key is shared by every worker).
final class SharedKeyTests: XCTestCase {
    func testOneKeySignsAndVerifiesFromManyThreads() throws {
        let key = try PrivateKey.generate(.ecP256)
        let failures = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: 400) { index in
            let message = Array("message \(index)".utf8)
            guard let signature = try? key.signature(for: message, algorithm: .ecdsaP256SHA256),
                  key.publicKey.isValidSignature(signature, for: message, algorithm: .ecdsaP256SHA256) else {
                failures.add(1, ordering: .relaxed)
                return
            }
        }
        XCTAssertEqual(failures.load(ordering: .relaxed), 0)
    }
}

/// An `openssl` command that exited with a failure.
private struct OpenSSLCommandError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}
