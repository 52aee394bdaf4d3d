import Endpoints
import OAuth2
import SafeText
import XCTest

/// Reading device authorization answers (RFC 8628 §3.2) and revocation answers (RFC 7009 §2.2).
final class DeviceAuthorizationTests: XCTestCase {
    private let request = TokenRequest.deviceAuthorization(
        for: makeIdentity(.deviceCode(seed: nil), clientId: "tv", secret: nil),
        at: HTTPURL(scheme: .https, host: "idp.example.com", path: "/device"),
        tokenEndpoint: HTTPURL(scheme: .https, host: "idp.example.com", path: "/token"))

    private func parse(_ body: String, status: Int = 200) throws -> DeviceAuthorization {
        try request.parseDeviceAuthorization(reply(status, body), unixTime: 0)
    }

    private func invalidReason(_ body: String, file: StaticString = #filePath, line: UInt = #line) -> String? {
        do {
            let authorization = try parse(body)
            XCTFail("expected an error, got \(authorization)", file: file, line: line)
        } catch {
            if case .invalidTokenResponse(200, _, let reason)? = error as? TokenEndpointError { return reason }
            XCTFail("\(error)", file: file, line: line)
        }
        return nil
    }

    func testRFC8628Example() throws {
        let authorization = try parse(#"""
            {"device_code": "GmRhmhcxhwAzkoEqiMEg_DnyEysNkuNhszIySk9eS", "user_code": "WDJB-MJHT",
             "verification_uri": "https://example.com/device",
             "verification_uri_complete": "https://example.com/device?user_code=WDJB-MJHT",
             "expires_in": 1800, "interval": 5}
            """#)
        XCTAssertEqual(authorization, DeviceAuthorization(
            deviceCode: Secret("GmRhmhcxhwAzkoEqiMEg_DnyEysNkuNhszIySk9eS"), userCode: "WDJB-MJHT",
            verificationUri: "https://example.com/device", verificationUriComplete: "https://example.com/device?user_code=WDJB-MJHT",
            expiresIn: 1800, interval: 5))
    }

    func testGoogleVerificationURLStringNumbersAndDefaultInterval() throws {
        let authorization = try parse(#"""
            {"device_code": "AH-1Ng2", "user_code": "GQVQ-JKEC", "verification_url": "https://www.google.com/device",
             "expires_in": "1800"}
            """#)
        XCTAssertEqual(authorization.verificationUri, "https://www.google.com/device")
        XCTAssertNil(authorization.verificationUriComplete)
        XCTAssertEqual(authorization.expiresIn, 1800)
        XCTAssertEqual(authorization.interval, 5)
    }

    func testMissingOrBrokenMembersAreNamed() {
        let uri = #""verification_uri": "https://example.com/device""#
        XCTAssertEqual(invalidReason(#"{"user_code": "U", \#(uri), "expires_in": 600}"#), "no device_code string")
        XCTAssertEqual(invalidReason(#"{"device_code": "D", \#(uri), "expires_in": 600}"#), "no user_code string")
        XCTAssertEqual(invalidReason(#"{"device_code": "D", "user_code": "U", "expires_in": 600}"#), "no verification_uri string")
        XCTAssertEqual(invalidReason(#"{"device_code": "D", "user_code": "U", \#(uri)}"#), "no positive expires_in")
        XCTAssertEqual(invalidReason(#"{"device_code": "D", "user_code": "U", \#(uri), "expires_in": true}"#), "no positive expires_in")
        XCTAssertEqual(invalidReason(#"{"device_code": "D", "user_code": "U", \#(uri), "expires_in": 600, "interval": 0}"#),
                       "interval is not a positive number of seconds")
        XCTAssertNotNil(invalidReason(#"{"device_code": "D", "user_code": "\#(String(repeating: "A", count: 65))", \#(uri), "expires_in": 6}"#))
    }

    func testVerificationURIsMustBeHTTPLinks() {
        let reason = invalidReason(#"""
            {"device_code": "D", "user_code": "U", "verification_uri": "javascript:alert(1)", "expires_in": 600}
            """#)
        XCTAssertTrue(reason?.hasPrefix("verification_uri is not an absolute http(s) URL") ?? false, reason ?? "")
        XCTAssertNotNil(invalidReason(#"""
            {"device_code": "D", "user_code": "U", "verification_uri": "https://e.com/d",
             "verification_uri_complete": "data:text/html,hi", "expires_in": 600}
            """#))
    }

    func testErrorAnswerIsAnOAuthError() {
        XCTAssertThrowsError(try parse(#"{"error":"invalid_client","error_description":"no such client"}"#, status: 401)) { error in
            XCTAssertEqual((error as? TokenEndpointError)?.oauthError?.code, .invalidClient)
        }
    }

    func testDescriptionShowsNoCode() throws {
        let authorization = try parse(#"""
            {"device_code": "GmRhmhcxhwAzkoEqiMEg_DnyEysNkuNhszIySk9eS", "user_code": "WDJB-MJHT",
             "verification_uri": "https://example.com/device", "expires_in": 1800}
            """#)
        assertHidden(["GmRhmhcxhwAzkoEqiMEg_DnyEysNkuNhszIySk9eS", "WDJB-MJHT"], in: authorization)
    }

    // MARK: - Revocation

    private let revocation = TokenRequest.revocation(
        for: makeIdentity(.authorizationCode(seed: nil)), token: Secret("rt-0123456789abcdef"),
        at: HTTPURL(scheme: .https, host: "idp.example.com", path: "/revoke"),
        tokenEndpoint: HTTPURL(scheme: .https, host: "idp.example.com", path: "/token"))

    func testRevocationSucceedsOnAny2xxBody() {
        XCTAssertNoThrow(try revocation.parseRevocation(reply(200, "", contentType: nil), unixTime: 0))
        XCTAssertNoThrow(try revocation.parseRevocation(reply(200, "{}"), unixTime: 0))
        XCTAssertNoThrow(try revocation.parseRevocation(reply(204, "", contentType: nil), unixTime: 0))
    }

    func testRevocationErrors() {
        XCTAssertThrowsError(try revocation.parseRevocation(reply(400, #"{"error":"unsupported_token_type"}"#), unixTime: 0)) {
            XCTAssertEqual(($0 as? TokenEndpointError)?.oauthError?.code, .other("unsupported_token_type"))
        }
        XCTAssertThrowsError(try revocation.parseRevocation(reply(503, "busy", contentType: "text/plain",
                                                                  headers: [("Retry-After", "30")]), unixTime: 0)) {
            let error = $0 as? TokenEndpointError
            XCTAssertEqual(error?.retryAfter, 30)
            XCTAssertEqual(error?.isTemporary, true)
            XCTAssertTrue(self.revocation.describe(error!).hasPrefix("the revocation endpoint answered HTTP 503"))
        }
        XCTAssertThrowsError(try revocation.parseRevocation(reply(302, "", headers: [("Location", "https://x/login?t=1")]), unixTime: 0))
    }
}
