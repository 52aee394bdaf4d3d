import Crypto
import JOSE
import XCTest

final class JWSRoundTripTests: JOSETestCase {
    private let payload = Array(#"{"sub":"relay"}"#.utf8)

    private func signed(_ algorithm: JWSAlgorithm) throws -> String {
        try JWS.sign(payload, header: JWSHeader(algorithm: algorithm, type: "JWT"), with: TestKeys.signer(algorithm)).compactSerialization
    }

    func testEveryAlgorithmSignsAndVerifies() throws {
        for algorithm in JWSAlgorithm.allCases {
            let jws = try JWS(compact: signed(algorithm))
            XCTAssertEqual(jws.header.algorithm, algorithm)
            XCTAssertEqual(jws.header.type, "JWT")
            XCTAssertEqual(jws.payload, payload)
            XCTAssertNoThrow(try jws.verify(with: TestKeys.verificationKey(algorithm)), "\(algorithm)")
        }
    }

    func testES256SignaturesAreRawRAndS() throws {
        XCTAssertEqual(try JWS(compact: signed(.es256)).signature.count, 64)
    }

    func testHeaderIsWrittenInAFixedOrder() throws {
        let header = try JWS(compact: signed(.es256)).compactSerialization.split(separator: ".")[0]
        XCTAssertEqual(Base64URL.decode(header), Array(#"{"typ":"JWT","alg":"ES256"}"#.utf8))
    }

    func testATamperedPayloadIsRejectedForEveryAlgorithm() throws {
        for algorithm in JWSAlgorithm.allCases {
            let segments = try signed(algorithm).split(separator: ".").map(String.init)
            let other = Base64URL.encode(Array(#"{"sub":"admin"}"#.utf8))
            let jws = try JWS(compact: [segments[0], other, segments[2]].joined(separator: "."))
            XCTAssertThrowsJOSE(try jws.verify(with: TestKeys.verificationKey(algorithm)), .invalidSignature)
        }
    }

    func testATamperedSignatureIsRejectedForEveryAlgorithm() throws {
        for algorithm in JWSAlgorithm.allCases {
            let jws = try JWS(compact: flippingCharacter(of: signed(algorithm), at: -3))
            XCTAssertThrowsJOSE(try jws.verify(with: TestKeys.verificationKey(algorithm)), .invalidSignature)
        }
    }

    func testATamperedHeaderIsRejected() throws {
        let segments = try signed(.rs256).split(separator: ".").map(String.init)
        let header = Base64URL.encode(Array(#"{"alg":"RS256","kid":"x"}"#.utf8))
        let jws = try JWS(compact: [header, segments[1], segments[2]].joined(separator: "."))
        XCTAssertThrowsJOSE(try jws.verify(with: TestKeys.verificationKey(.rs256)), .invalidSignature)
    }

    func testATruncatedSignatureIsRejected() throws {
        for algorithm in JWSAlgorithm.allCases {
            let segments = try signed(algorithm).split(separator: ".").map(String.init)
            let shorter = Base64URL.encode(Base64URL.decode(segments[2])!.dropLast())
            let jws = try JWS(compact: [segments[0], segments[1], shorter].joined(separator: "."))
            XCTAssertThrowsJOSE(try jws.verify(with: TestKeys.verificationKey(algorithm)), .invalidSignature)
        }
    }

    func testAnotherKeyOfTheSameKindDoesNotVerify() throws {
        let rsa = try JWS(compact: signed(.rs256))
        XCTAssertThrowsJOSE(try rsa.verify(with: JWSVerificationKey(publicKey: TestKeys.otherRSA.publicKey)), .invalidSignature)
        let ec = try JWS(compact: signed(.es256))
        XCTAssertThrowsJOSE(try ec.verify(with: JWSVerificationKey(publicKey: TestKeys.otherEC.publicKey)), .invalidSignature)
    }

    func testMalformedSerialisationsAreRefused() {
        let header = Base64URL.encode(Array(#"{"alg":"ES256"}"#.utf8))
        XCTAssertThrowsJOSE(try JWS(compact: "\(header).e30"), .malformed("a compact JWS has three dot-separated segments"))
        XCTAssertThrowsJOSE(try JWS(compact: "\(header).e30.AA.AA"), .malformed("a compact JWS has three dot-separated segments"))
        XCTAssertThrowsJOSE(try JWS(compact: "\(header)=.e30.AA"), .malformed("the JWS header is not base64url"))
        XCTAssertThrowsJOSE(try JWS(compact: "\(header).e30=.AA"), .malformed("the JWS payload is not base64url"))
        XCTAssertThrowsJOSE(try JWS(compact: "\(header).e30.A+"), .malformed("the JWS signature is not base64url"))
        XCTAssertThrowsJOSE(try JWS(compact: "e30.e30.AA"), .malformed("the JWS header has no alg string"))
        XCTAssertThrowsJOSE(try JWS(compact: "\(Base64URL.encode(Array("[1]".utf8))).e30.AA"),
                            .malformed("the JWS header is not a JSON object"))
    }
}
