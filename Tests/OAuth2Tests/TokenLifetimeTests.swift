import Endpoints
import OAuth2
import XCTest

/// Hostile or broken token endpoints: lifetimes no relay should take as given, and 200 answers
/// that say they are errors.
final class TokenLifetimeTests: XCTestCase {
    private let oneYear: Double = 365 * 24 * 3600

    private func token(expiresIn json: String, format: TokenResponseFormat = TokenResponseFormat(),
                       file: StaticString = #filePath, line: UInt = #line) throws -> TokenResponse {
        try parsedToken(reply(200, #"{"access_token":"a","expires_in":\#(json)}"#), format: format, file: file, line: line)
    }

    func testAWellFormedLifetimeCarriesNoWarning() throws {
        XCTAssertEqual(try token(expiresIn: "300").lifetimeWarnings, [])
    }

    func testZeroAndNegativeExpiresInAreIgnoredWithAWarning() throws {
        for value in ["0", "-1", "-3600", #""-5""#, "-0.5"] {
            let parsed = try token(expiresIn: value)
            XCTAssertEqual(parsed.expiresIn, 3600, value)
            XCTAssertEqual(parsed.expirySource, .defaultLifetime, value)
            XCTAssertEqual(parsed.lifetimeWarnings, [.ignored(field: "expires_in", reason: .notPositive)], value)
        }
    }

    func testExpiresInThatIsNoNumberIsIgnoredWithAWarning() throws {
        for value in [#""soon""#, #""NaN""#, #""nan""#, #""inf""#, #""Infinity""#, #""1e999""#, #""0x10""#, #""""#, "true",
                      "false", "[]", "{}", #""12 s""#] {
            let parsed = try token(expiresIn: value)
            XCTAssertEqual(parsed.expirySource, .defaultLifetime, value)
            XCTAssertEqual(parsed.lifetimeWarnings, [.ignored(field: "expires_in", reason: .notANumber)], value)
        }
    }

    func testANumericStringMayHaveSpacesAround() throws {
        for value in [#"" 3600 ""#, #""\t3600\u00a0""#, #""3600.0""#] {
            XCTAssertEqual(try token(expiresIn: value).expiresIn, 3600, value)
            XCTAssertEqual(try token(expiresIn: value).lifetimeWarnings, [], value)
        }
        XCTAssertEqual(try token(expiresIn: #""3600\n""#).lifetimeWarnings, [.ignored(field: "expires_in", reason: .notANumber)])
    }

    func testAnyJSONNumberIsANumberOfSeconds() throws {
        for value in ["3600", "3600.0", "3.6e3", "3600E0"] {
            XCTAssertEqual(try token(expiresIn: value).expiresIn, 3600, value)
        }
    }

    func testOneIsOneSecondNotTrue() throws {
        // Foundation bridges the JSON number 1 to `Bool`; it is still a number of seconds.
        XCTAssertEqual(try token(expiresIn: "1").expiresIn, 1)
        XCTAssertEqual(try token(expiresIn: "1").expirySource, .expiresIn)
    }

    func testNullExpiresInIsAbsentWithoutAWarning() throws {
        let parsed = try token(expiresIn: "null")
        XCTAssertEqual(parsed.expirySource, .defaultLifetime)
        XCTAssertEqual(parsed.lifetimeWarnings, [])
    }

    func testAnIgnoredExpiresInFallsBackToTheJWTExp() throws {
        let jwt = makeJWT(#"{"exp":1700000120}"#)
        let parsed = try parsedToken(reply(200, #"{"access_token":"\#(jwt)","expires_in":-1}"#), unixTime: 1_700_000_000)
        XCTAssertEqual(parsed.expiresIn, 120)
        XCTAssertEqual(parsed.expirySource, .jwtExp)
        XCTAssertEqual(parsed.lifetimeWarnings.map(\.field), ["expires_in"])
    }

    func testALifetimeBeyondAYearIsCutToAYear() throws {
        for value in ["31536001", "1e300", "123456789012345678901234567890", #""99999999999999999999""#] {
            let parsed = try token(expiresIn: value)
            XCTAssertEqual(parsed.expiresIn, oneYear, value)
            XCTAssertEqual(parsed.expirySource, .expiresIn, value)
            XCTAssertEqual(parsed.lifetimeWarnings, [.capped(field: "expires_in")], value)
        }
        XCTAssertEqual(try token(expiresIn: "31536000").lifetimeWarnings, [])
    }

    func testAJWTExpBeyondAYearIsCutToAYear() throws {
        let jwt = makeJWT(#"{"exp":9999999999}"#)
        let parsed = try parsedToken(reply(200, #"{"access_token":"\#(jwt)"}"#), unixTime: 1_700_000_000)
        XCTAssertEqual(parsed.expiresIn, oneYear)
        XCTAssertEqual(parsed.lifetimeWarnings, [.capped(field: "exp (JWT claim)")])
    }

    func testADefaultBeyondAYearIsCutToAYear() throws {
        let parsed = try parsedToken(reply(200, #"{"access_token":"a"}"#), format: TokenResponseFormat(defaultExpiresInSeconds: 1e12))
        XCTAssertEqual(parsed.expiresIn, oneYear)
        XCTAssertEqual(parsed.lifetimeWarnings, [.capped(field: "defaultExpiresInSeconds")])
    }

    func testWarningsNameTheIdentitysOwnExpiryField() throws {
        let format = TokenResponseFormat(fields: ResponseFields(expiry: "ttl"))
        let parsed = try parsedToken(reply(200, #"{"access_token":"a","ttl":-3}"#), format: format)
        XCTAssertEqual(parsed.lifetimeWarnings, [.ignored(field: "ttl", reason: .notPositive)])
    }

    func testALifetimeUnderTheRefreshIntervalIsKeptAndWarnedAbout() throws {
        let parsed = try token(expiresIn: "0.2")
        XCTAssertEqual(parsed.expiresIn, 0.2)
        XCTAssertEqual(parsed.lifetimeWarnings, [.shorterThanRefreshInterval(field: "expires_in")])
    }

    func testWarningsNeverQuoteTheValue() throws {
        let parsed = try token(expiresIn: #""tok-SECRETVALUE""#)
        for warning in parsed.lifetimeWarnings {
            XCTAssertFalse(warning.description.contains("SECRETVALUE"), warning.description)
        }
        XCTAssertEqual(parsed.lifetimeWarnings.map(\.description), ["expires_in is not a number of seconds; ignored"])
    }

    func testNumbersJSONCannotHoldMakeTheAnswerNoTokenResponse() {
        for value in ["NaN", "Infinity", "-Infinity", "1e400"] {
            guard case .invalidTokenResponse(200, _, "the body is not a JSON object")?
                    = parseError(reply(200, #"{"access_token":"a","expires_in":\#(value)}"#)) else {
                return XCTFail(value)
            }
        }
    }

    // MARK: - A 200 that says it is an error

    func testA200WithAnOAuthErrorAndATokenIsTheError() {
        let error = parseError(reply(200, #"{"access_token":"a","expires_in":60,"error":"invalid_client"}"#))
        XCTAssertEqual(error?.oauthError?.code, .invalidClient)
        XCTAssertEqual(error?.status, 200)
        XCTAssertEqual(error?.isTemporary, false)
    }

    func testA200WithATemporaryOAuthErrorAndATokenIsTemporary() {
        XCTAssertEqual(parseError(reply(200, #"{"access_token":"a","error":"temporarily_unavailable"}"#))?.isTemporary, true)
    }

    func testA200WithAnErrorMemberThatIsNoCodeIsNoToken() {
        for member in [#"{"code":7}"#, "true", "1", #"["x"]"#] {
            guard case .invalidTokenResponse(200, _, _)? = parseError(reply(200, #"{"access_token":"a","error":\#(member)}"#)) else {
                return XCTFail(member)
            }
        }
    }

    func testAnErrorMemberThatSaysNoErrorIsNoError() throws {
        for member in ["null", "false", #""""#] {
            XCTAssertEqual(try parsedToken(reply(200, #"{"access_token":"a","error":\#(member)}"#)).accessToken.value, "a", member)
        }
    }

    func testAFormEncoded200WithAnErrorIsTheError() {
        let error = parseError(reply(200, "access_token=a&error=access_denied", contentType: "application/x-www-form-urlencoded"))
        XCTAssertEqual(error?.oauthError?.code, .accessDenied)
    }
}
