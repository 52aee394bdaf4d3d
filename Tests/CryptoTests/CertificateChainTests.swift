import CertificateTestSupport
import Crypto
import XCTest

/// PEM certificates as DER, checked against what the `openssl` command computed of the same
/// certificates (CertificateFixtures), and SHA-1 against its FIPS 180 vector.
final class CertificateChainTests: XCTestCase {
    func testSHA1OfABC() {
        XCTAssertEqual(hex(SHA1.hash(Array("abc".utf8))), "a9993e364706816aba3e25717850c26c9cd0d89d")
        XCTAssertEqual(hex(SHA1.hash([])), "da39a3ee5e6b4b0d3255bfef95601890afd80709")
    }

    func testACertificateReadsAsTheDEROpenSSLHashed() throws {
        let chain = try CertificateChain(pem: CertificateFixtures.leafPEM)
        XCTAssertEqual(chain.derCertificates.count, 1)
        XCTAssertEqual(hex(SHA256.hash(chain.leafDER)), CertificateFixtures.leafSHA256Hex)
        XCTAssertEqual(hex(SHA1.hash(chain.leafDER)), CertificateFixtures.leafSHA1Hex)
        XCTAssertEqual(chain.leafPublicKey, try PublicKey(pem: CertificateFixtures.leafPublicKeyPEM))
        XCTAssertEqual(chain.leafPublicKey.kind, .rsa(bits: 2048))
    }

    func testAChainKeepsItsOrderAndTheLeafIsTheFirst() throws {
        let chain = try CertificateChain(pem: CertificateFixtures.leafPEM + CertificateFixtures.caPEM)
        XCTAssertEqual(chain.derCertificates.map { hex(SHA256.hash($0)) },
                       [CertificateFixtures.leafSHA256Hex, CertificateFixtures.caSHA256Hex])
        XCTAssertEqual(chain.leafPublicKey, try PublicKey(pem: CertificateFixtures.leafPublicKeyPEM))
        let reversed = try CertificateChain(pem: CertificateFixtures.caPEM + CertificateFixtures.leafPEM)
        XCTAssertEqual(hex(SHA256.hash(reversed.leafDER)), CertificateFixtures.caSHA256Hex)
        XCTAssertEqual(reversed.leafPublicKey.kind, .ecP256)
        XCTAssertNotEqual(chain, reversed)
    }

    func testOtherPEMBlocksBesideTheCertificateAreSkipped() throws {
        let text = CertificateFixtures.leafPublicKeyPEM + "\n" + CertificateFixtures.leafPEM
        XCTAssertEqual(try CertificateChain(pem: text), try CertificateChain(pem: CertificateFixtures.leafPEM))
    }

    func testTextWithoutACertificateIsRefused() {
        for text in ["", "not PEM at all", CertificateFixtures.leafPublicKeyPEM] {
            XCTAssertThrowsError(try CertificateChain(pem: text)) { error in
                guard case .unreadableCertificate(let reason) = error as? CryptoError else { return XCTFail("\(error)") }
                XCTAssertTrue(reason.hasPrefix("no certificate in the PEM text"), reason)
            }
        }
    }

    func testADamagedCertificateAfterAGoodOneIsRefused() {
        let damaged = "-----BEGIN CERTIFICATE-----\nTm90QUNlcnRpZmljYXRl\n-----END CERTIFICATE-----\n"
        XCTAssertThrowsError(try CertificateChain(pem: CertificateFixtures.leafPEM + damaged)) { error in
            guard case .unreadableCertificate(let reason) = error as? CryptoError else { return XCTFail("\(error)") }
            XCTAssertTrue(reason.hasPrefix("certificate 2 of the PEM text"), reason)
            XCTAssertFalse("\(error)".contains("Tm90QUNl"))
        }
    }

    func testTheLeafKeyIsFreedWithItsChainOrWhenTheChainIsRefused() throws {
        let before = PrivateKey.liveKeys
        try withExtendedLifetime(CertificateChain(pem: CertificateFixtures.leafPEM + CertificateFixtures.caPEM)) {
            XCTAssertEqual(PrivateKey.liveKeys, before + 1, "one key: the leaf's")
        }
        XCTAssertEqual(PrivateKey.liveKeys, before)
        let damaged = "-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----\n"
        XCTAssertThrowsError(try CertificateChain(pem: CertificateFixtures.leafPEM + damaged))
        XCTAssertEqual(PrivateKey.liveKeys, before)
    }
}
