import Crypto
import JOSE
import XCTest

/// The App JWT as GitHub's "Generating a JSON Web Token (JWT) for a GitHub App" asks for it:
/// header and claims to the byte, and a signature GitHub can verify with the App's public key.
final class GitHubAppJWTTests: JOSETestCase {
    private let now: Int64 = 1_800_000_000

    /// The three segments of `compact`, the first two base64url-decoded as text.
    private func segments(_ compact: String) throws -> (header: String, payload: String) {
        let parts = compact.split(separator: ".", omittingEmptySubsequences: false)
        XCTAssertEqual(parts.count, 3)
        return (String(decoding: try XCTUnwrap(Base64URL.decode(parts[0])), as: UTF8.self),
                String(decoding: try XCTUnwrap(Base64URL.decode(parts[1])), as: UTF8.self))
    }

    func testHeaderAndClaimsAreExactlyWhatGitHubDocuments() throws {
        let compact = try GitHubAppJWT.make(issuer: "12345", signer: TestKeys.signer(.rs256), now: now)
        let (header, payload) = try segments(compact)
        XCTAssertEqual(header, #"{"typ":"JWT","alg":"RS256"}"#)
        XCTAssertEqual(payload, #"{"iat":1799999940,"exp":1800000540,"iss":"12345"}"#)
    }

    func testIssuedAMinuteAgoAndValidForTenMinutesAtMost() throws {
        let claims = try JWTClaims(payload: JWS(compact: GitHubAppJWT.make(issuer: "12345", signer: TestKeys.signer(.rs256), now: now)).payload)
        let (issuedAt, expiry) = (try XCTUnwrap(claims.issuedAt), try XCTUnwrap(claims.expiry))
        XCTAssertEqual(now - issuedAt, 60)
        XCTAssertEqual(expiry - issuedAt, 600, "GitHub refuses an exp more than 10 minutes after iat")
        XCTAssertLessThan(expiry - now, 600, "a minute under GitHub's limit for a clock that runs ahead")
    }

    func testTheSignatureVerifiesWithTheAppsPublicKeyOnly() throws {
        let jws = try JWS(compact: GitHubAppJWT.make(issuer: "12345", signer: TestKeys.signer(.rs256), now: now))
        XCTAssertNoThrow(try jws.verify(with: JWSVerificationKey(publicKey: TestKeys.rsa.publicKey, allowing: [.rs256])))
        XCTAssertThrowsError(try jws.verify(with: JWSVerificationKey(publicKey: TestKeys.otherRSA.publicKey, allowing: [.rs256])))
    }

    func testTheClientIDMayBeTheIssuer() throws {
        let compact = try GitHubAppJWT.make(issuer: "Iv23liAbCdEf01234567", signer: TestKeys.signer(.rs256), now: now)
        XCTAssertEqual(try JWTClaims(payload: JWS(compact: compact).payload).issuer, "Iv23liAbCdEf01234567")
    }

    func testOnlyRS256Signs() throws {
        for algorithm in [JWSAlgorithm.ps256, .es256, .edDSA, .hs256] {
            XCTAssertThrowsError(try GitHubAppJWT.make(issuer: "1", signer: TestKeys.signer(algorithm), now: now), "\(algorithm)") { error in
                XCTAssertEqual(error as? JOSEError, .algorithmNotAllowed("GitHub verifies App JWTs with RS256 only, not \(algorithm.rawValue)"))
            }
        }
    }
}
