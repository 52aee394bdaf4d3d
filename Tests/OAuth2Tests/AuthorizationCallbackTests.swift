import OAuth2
import SafeText
import XCTest

/// Reading the query of the callback the IdP sends the browser back to.
final class AuthorizationCallbackTests: XCTestCase {
    private let issuer = "https://idp.example.com"

    private func parse(_ query: String?, issuerRequired: Bool = false) throws -> AuthorizationCallback {
        try AuthorizationCallback.parse(query: query, issuer: issuer, issuerRequired: issuerRequired)
    }

    private func problem(_ query: String?, issuerRequired: Bool = false) -> AuthorizationCallbackProblem? {
        do {
            let callback = try parse(query, issuerRequired: issuerRequired)
            XCTFail("expected a problem, got \(callback)")
            return nil
        } catch {
            return error as? AuthorizationCallbackProblem
        }
    }

    func testCodeAndState() throws {
        XCTAssertEqual(try parse("code=SplxlOBeZQQYbYS6WxSbIA&state=xyz%2B1"),
                       .code(code: Secret("SplxlOBeZQQYbYS6WxSbIA"), state: Secret("xyz+1")))
    }

    func testMatchingIssIsAccepted() throws {
        XCTAssertEqual(try parse("code=c&state=s&iss=https%3A%2F%2Fidp.example.com", issuerRequired: true),
                       .code(code: Secret("c"), state: Secret("s")))
    }

    func testErrorWithDescriptionAndState() throws {
        let callback = try parse("error=access_denied&error_description=The+user+said+no%0A&state=s")
        XCTAssertEqual(callback, .error(OAuthError(code: .accessDenied, errorDescription: "The user said no"), state: Secret("s")))
        XCTAssertEqual(callback.state, Secret("s"))
    }

    func testErrorWithoutStateIsStillAnError() throws {
        XCTAssertEqual(try parse("error=server_error"), .error(OAuthError(code: .serverError), state: nil))
    }

    func testErrorWinsOverACode() throws {
        XCTAssertEqual(try parse("code=c&error=invalid_scope&state=s"), .error(OAuthError(code: .invalidScope), state: Secret("s")))
    }

    func testMissingStateOrCodeIsAProblem() {
        XCTAssertEqual(problem("code=c"), .missingState)
        XCTAssertEqual(problem("code=c&state="), .missingState)
        XCTAssertEqual(problem("state=s"), .missingCode)
        XCTAssertEqual(problem(nil), .missingCode)
        XCTAssertEqual(problem("code=&state=s"), .missingCode)
    }

    func testRepeatedParameterIsRefused() {
        XCTAssertEqual(problem("code=a&state=s&code=b"), .duplicateParameter("code"))
        XCTAssertEqual(problem("code=a&state=s&state=t"), .duplicateParameter("state"))
    }

    func testIssuerOfAnotherIdPIsRefused() {
        XCTAssertEqual(problem("code=c&state=s&iss=https%3A%2F%2Fevil.example"), .issuerMismatch(expected: issuer))
        XCTAssertEqual(problem("error=access_denied&state=s&iss=https%3A%2F%2Fevil.example"), .issuerMismatch(expected: issuer))
    }

    func testMissingIssIsRefusedOnlyWhenPromised() throws {
        XCTAssertEqual(problem("code=c&state=s", issuerRequired: true), .missingIssuer)
        XCTAssertNoThrow(try parse("code=c&state=s"))
    }

    func testIssIsNotCheckedWithoutAKnownIssuer() throws {
        XCTAssertEqual(try AuthorizationCallback.parse(query: "code=c&state=s&iss=x", issuer: nil),
                       .code(code: Secret("c"), state: Secret("s")))
    }

    func testDescriptionsShowNoCodeOrState() {
        let code = "c0de-c0de-c0de-c0de-c0de"
        let state = "st4te-st4te-st4te-st4te"
        assertHidden([code, state], in: AuthorizationCallback.code(code: Secret(code), state: Secret(state)))
        assertHidden([state], in: AuthorizationCallback.error(OAuthError(code: .accessDenied), state: Secret(state)))
        for problem in [AuthorizationCallbackProblem.missingCode, .missingState, .duplicateParameter("code"), .missingIssuer] {
            XCTAssertFalse(problem.description.isEmpty)
        }
    }
}
