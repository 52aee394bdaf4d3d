import Endpoints
import JSON
import OAuth2
import SafeText
import XCTest

/// RFC 7662 §2.2's answer, read strictly: active only for a JSON `true`, every member the relay
/// reads of its type, one JSON object of bounded size; and how long an answer may be reused.
final class IntrospectionResponseTests: XCTestCase {
    private let request = TokenRequest.introspection(for: makeIdentity(auth: .basic), token: Secret("caller-token"),
                                                     at: HTTPURL(scheme: .https, host: "idp.example.com", path: "/introspect"),
                                                     tokenEndpoint: nil)

    private func answer(_ body: String) throws -> IntrospectionResponse {
        try request.parseIntrospection(reply(200, body), unixTime: 0)
    }

    private func active(_ body: String, file: StaticString = #filePath, line: UInt = #line) throws -> IntrospectedToken {
        guard case .active(let token) = try answer(body) else {
            XCTFail("not active", file: file, line: line)
            throw TokenEndpointError.unreachable(reason: "test")
        }
        return token
    }

    /// The reason an answer is refused for, or nil when it is read.
    private func refusal(_ body: String) -> String? {
        do {
            _ = try answer(body)
            return nil
        } catch {
            guard case .invalidTokenResponse(_, _, let reason)? = error as? TokenEndpointError else { return "another error: \(error)" }
            return reason
        }
    }

    /// RFC 7662 §2.2's example answer.
    func testRFC7662Example() throws {
        let token = try active("""
            {"active": true, "client_id": "l238j323ds-23ij4", "username": "jdoe", "scope": "read write dolphin",
             "sub": "Z5O3upPC88QrAjx00dis", "aud": "https://protected.example.net/resource",
             "iss": "https://server.example.com/", "exp": 1419356238, "iat": 1419350238, "extension_field": "twenty-seven"}
            """)
        XCTAssertEqual(token.clientID, "l238j323ds-23ij4")
        XCTAssertEqual(token.username, "jdoe")
        XCTAssertEqual(token.scopes, ["read", "write", "dolphin"])
        XCTAssertEqual(token.subject, "Z5O3upPC88QrAjx00dis")
        XCTAssertEqual(token.audience, ["https://protected.example.net/resource"])
        XCTAssertEqual(token.issuer, "https://server.example.com/")
        XCTAssertEqual(token.expiry, 1_419_356_238)
        XCTAssertEqual(token.issuedAt, 1_419_350_238)
        XCTAssertNil(token.notBefore)
        XCTAssertNil(token.boundKeyThumbprint)
        XCTAssertEqual(token.claims["extension_field"], .string("twenty-seven"))
    }

    /// django-oauth-toolkit 3.4.1's answer, as its /o/introspect/ sends it (no `iss`, no `sub`).
    func testDjangoOAuthToolkitsAnswer() throws {
        let token = try active(#"{"active": true, "scope": "orders.read orders.write", "exp": 1800003600, "client_id": "orders-cc.1a2b", "username": "alice"}"#)
        XCTAssertEqual(token.scopes, ["orders.read", "orders.write"])
        XCTAssertEqual(token.clientID, "orders-cc.1a2b")
        XCTAssertNil(token.issuer)
        XCTAssertEqual(try answer(#"{"active": false}"#), .inactive)
    }

    func testAudienceIsAStringOrAnArray() throws {
        XCTAssertEqual(try active(#"{"active":true,"aud":["a","b"]}"#).audience, ["a", "b"])
        XCTAssertEqual(try active(#"{"active":true,"aud":"a"}"#).audience, ["a"])
        XCTAssertEqual(try active(#"{"active":true}"#).audience, [])
    }

    func testTheDPoPBindingIsRead() throws {
        XCTAssertEqual(try active(#"{"active":true,"token_type":"DPoP","cnf":{"jkt":"0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"}}"#)
                        .boundKeyThumbprint, "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I")
        XCTAssertNil(try active(#"{"active":true,"cnf":{"x5t#S256":"abc"}}"#).boundKeyThumbprint)
        XCTAssertTrue(try active(#"{"active":true,"cnf":{"x5t#S256":"abc"}}"#).hasUncheckableBinding)
        XCTAssertTrue(try active(#"{"active":true,"cnf":{"jkt":null}}"#).hasUncheckableBinding)
        XCTAssertFalse(try active(#"{"active":true,"cnf":{"jkt":"abc"}}"#).hasUncheckableBinding)
        XCTAssertFalse(try active(#"{"active":true,"cnf":null}"#).hasUncheckableBinding)
    }

    func testNullCountsAsAbsent() throws {
        let token = try active(#"{"active":true,"username":null,"exp":null,"aud":null,"cnf":null}"#)
        XCTAssertNil(token.username)
        XCTAssertNil(token.expiry)
        XCTAssertEqual(token.audience, [])
        XCTAssertNil(token.boundKeyThumbprint)
    }

    /// Only a JSON `true` is active; `false` is inactive; anything else is no answer at all.
    func testActiveMustBeAJSONBoolean() throws {
        XCTAssertEqual(try answer(#"{"active":false,"scope":"ignored","exp":"ignored"}"#), .inactive)
        for (body, reason) in [(#"{"active":"true"}"#, "active is not a JSON boolean"),
                               (#"{"active":1}"#, "active is not a JSON boolean"),
                               (#"{"active":"false"}"#, "active is not a JSON boolean"),
                               (#"{"active":null}"#, "active is not a JSON boolean"),
                               (#"{"scope":"orders.read"}"#, "there is no active member")] {
            XCTAssertEqual(refusal(body), reason, body)
        }
    }

    func testEachMemberOfTheWrongTypeIsNamed() {
        let table: [(String, String)] = [
            (#""exp":"1800000000""#, "exp is not a number"),
            (#""iat":true"#, "iat is not a number"),
            (#""nbf":[1]"#, "nbf is not a number"),
            (#""scope":["a"]"#, "scope is not a string"),
            (#""client_id":7"#, "client_id is not a string"),
            (#""username":{}"#, "username is not a string"),
            (#""sub":1"#, "sub is not a string"),
            (#""iss":false"#, "iss is not a string"),
            (#""token_type":1"#, "token_type is not a string"),
            (#""jti":1"#, "jti is not a string"),
            (#""aud":1"#, "aud is neither a string nor an array of strings"),
            (#""aud":["a",1]"#, "aud is neither a string nor an array of strings"),
            (#""cnf":"jkt""#, "cnf is not an object"),
            (#""cnf":{"jkt":1}"#, "cnf.jkt is not a string"),
        ]
        for (member, reason) in table {
            XCTAssertEqual(refusal(#"{"active":true,\#(member)}"#), reason, member)
        }
    }

    func testWhatIsNotOneJSONObjectIsRefused() {
        for body in ["", "[]", #"["active",true]"#, "true", #"{"active":true"#, "<html>ok</html>"] {
            XCTAssertEqual(refusal(body), "the body is not a JSON object", body)
        }
        XCTAssertEqual(refusal(#"{"active":false,"active":true}"#), "the member active appears more than once")
        XCTAssertEqual(refusal(#"{"active":true,"scope":"a","scope":"a b"}"#), "the member scope appears more than once")
    }

    func testAnOversizedBodyIsRefused() throws {
        let filler = String(repeating: "x", count: IntrospectionResponse.maximumBodyBytes)
        XCTAssertEqual(refusal(#"{"active":true,"pad":"\#(filler)"}"#), "the body is larger than 32768 bytes")
        let fitting = String(repeating: "x", count: IntrospectionResponse.maximumBodyBytes - #"{"active":true,"pad":""}"#.utf8.count)
        XCTAssertNil(refusal(#"{"active":true,"pad":"\#(fitting)"}"#))
    }

    func testTheAnswerIsDescribedByItsMemberNamesOnly() throws {
        let token = try active(#"{"active":true,"username":"alice@example.com","email":"alice@example.com"}"#)
        for text in everyRendering(of: token) {
            XCTAssertFalse(text.contains("alice"), text)
        }
        XCTAssertEqual(token.description, "active token (active, username, email)")
    }

    // MARK: Reuse

    func testAnActiveAnswerIsReusedUntilExpiryAtMostTheMaximum() throws {
        let now: Int64 = 1_800_000_000
        let table: [(expiry: String, maximum: Int64, seconds: Int64)] = [
            ("1800000100", 300, 100),
            ("1800003600", 300, 300),
            ("1800003600", 60, 60),
            ("1800000000", 300, 0),
            ("1799999000", 300, 0),
            ("null", 300, 300),
            ("9223372036854775807", 300, 300),
            ("-9223372036854775808", 300, 0),
            ("1800003600", -5, 0),
        ]
        for row in table {
            let response = try answer(#"{"active":true,"exp":\#(row.expiry)}"#)
            XCTAssertEqual(response.reusableSeconds(now: now, maximumSeconds: row.maximum), row.seconds, "exp \(row.expiry), max \(row.maximum)")
        }
        XCTAssertEqual(try answer(#"{"active":true,"exp":1800003600}"#).reusableSeconds(now: now), IntrospectionResponse.defaultMaximumReuseSeconds)
    }

    func testAnInactiveAnswerIsNotReused() {
        XCTAssertEqual(IntrospectionResponse.inactive.reusableSeconds(now: 0, maximumSeconds: 300), 0)
    }
}
