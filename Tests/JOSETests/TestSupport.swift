import Crypto
import JOSE
import XCTest

/// Keys generated once per test run (RSA generation is the slow part).
enum TestKeys {
    static let rsa = try! PrivateKey.generate(.rsa(bits: 2048))
    static let otherRSA = try! PrivateKey.generate(.rsa(bits: 2048))
    static let ec = try! PrivateKey.generate(.ecP256)
    static let otherEC = try! PrivateKey.generate(.ecP256)
    static let ed25519 = try! PrivateKey.generate(.ed25519)
    static let secret = SymmetricKey(Array("0123456789abcdef0123456789abcdef".utf8))

    /// A signer for every algorithm, with the key each needs.
    static func signer(_ algorithm: JWSAlgorithm) throws -> JWSSigner {
        switch algorithm {
        case .rs256, .ps256: try JWSSigner(privateKey: rsa, algorithm: algorithm)
        case .es256: try JWSSigner(privateKey: ec, algorithm: algorithm)
        case .edDSA: try JWSSigner(privateKey: ed25519, algorithm: algorithm)
        case .hs256: try JWSSigner(hmacSecret: secret)
        }
    }

    static func verificationKey(_ algorithm: JWSAlgorithm) throws -> JWSVerificationKey {
        switch algorithm {
        case .rs256, .ps256: try JWSVerificationKey(publicKey: rsa.publicKey)
        case .es256: try JWSVerificationKey(publicKey: ec.publicKey)
        case .edDSA: try JWSVerificationKey(publicKey: ed25519.publicKey)
        case .hs256: JWSVerificationKey(hmacSecret: secret)
        }
    }
}

/// Every JOSE test is also a leak check: each OpenSSL key it made (a JWK's public key, a
/// verification key) has been freed when it ends. The shared `TestKeys` are made before.
class JOSETestCase: XCTestCase {
    private var liveKeysBefore = 0

    override class func setUp() {
        super.setUp()
        _ = [TestKeys.rsa, TestKeys.otherRSA, TestKeys.ec, TestKeys.otherEC, TestKeys.ed25519]
    }

    override func setUp() {
        super.setUp()
        liveKeysBefore = PrivateKey.liveKeys
    }

    override func tearDown() {
        XCTAssertEqual(PrivateKey.liveKeys, liveKeysBefore, "OpenSSL keys left alive")
        super.tearDown()
    }
}

/// A predictable random source: each call returns the next number, so `jti`s differ and tests
/// can name them.
struct CountingRandom: RandomNumberGenerator {
    var state: UInt64 = 0

    mutating func next() -> UInt64 {
        state += 1
        return state
    }
}

/// `text` with one base64url character at `index` (from the end when negative) changed.
func flippingCharacter(of text: String, at index: Int) -> String {
    var characters = Array(text)
    let position = index >= 0 ? index : characters.count + index
    characters[position] = characters[position] == "A" ? "B" : "A"
    return String(characters)
}

func XCTAssertThrowsJOSE(_ expression: @autoclosure () throws -> some Any, _ expected: JOSEError,
                         file: StaticString = #filePath, line: UInt = #line) {
    XCTAssertThrowsError(try expression(), file: file, line: line) { error in
        XCTAssertEqual(error as? JOSEError, expected, file: file, line: line)
    }
}
