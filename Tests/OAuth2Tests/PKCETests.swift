import OAuth2
import XCTest

/// PKCE S256 (RFC 7636): verifiers as §4.1 wants them, challenges as §4.2 computes them.
final class PKCETests: XCTestCase {
    func testChallengeOfRFC7636AppendixBExample() throws {
        let pkce = try PKCE(verifier: "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk")
        XCTAssertEqual(pkce.challenge, "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM")
        XCTAssertEqual(PKCE.method, "S256")
    }

    func testFreshVerifierIs43UnreservedCharactersFromTheRandomSource() {
        var random = SeededRandom(seed: 7)
        let first = PKCE(random: &random)
        let second = PKCE(random: &random)
        var again = SeededRandom(seed: 7)
        XCTAssertEqual(first.verifier.value.count, 43)
        XCTAssertTrue(first.verifier.value.allSatisfy { $0.isLetter || $0.isNumber || "-._~".contains($0) })
        XCTAssertNoThrow(try PKCE(verifier: first.verifier.value), "a drawn verifier passes the §4.1 check")
        XCTAssertNotEqual(first.verifier, second.verifier)
        XCTAssertEqual(PKCE(random: &again).verifier, first.verifier, "the verifier comes from the injected source only")
        XCTAssertEqual(first.challenge.count, 43)
    }

    func testVerifierOfWrongLengthOrAlphabetIsRefused() {
        XCTAssertThrowsError(try PKCE(verifier: String(repeating: "a", count: 42))) {
            XCTAssertEqual($0 as? PKCEError, .badLength(42))
        }
        XCTAssertThrowsError(try PKCE(verifier: String(repeating: "a", count: 129)))
        XCTAssertNoThrow(try PKCE(verifier: String(repeating: "a", count: 128)))
        XCTAssertThrowsError(try PKCE(verifier: String(repeating: "a", count: 42) + "+")) {
            XCTAssertEqual($0 as? PKCEError, .badCharacter)
        }
    }

    func testDescriptionShowsNoVerifier() throws {
        var random = SeededRandom()
        let pkce = PKCE(random: &random)
        assertHidden([pkce.verifier.value, pkce.challenge], in: pkce)
    }
}
