import Config
import OAuth2
import SafeText
import XCTest

/// `subjectTokenFrom: "caller"`, `assertionFrom: "caller"` and `maxCallers`: the grants on behalf
/// of the caller they decode to, and every refusal, with its JSON path.
final class CallerGrantConfigTests: XCTestCase {
    private let tokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"
    private let jwtBearer = "urn:ietf:params:oauth:grant-type:jwt-bearer"
    private let jwtType = "urn:ietf:params:oauth:token-type:jwt"

    /// A token exchange on behalf of the caller, with `extra` keys.
    private func exchange(_ extra: String = "") -> String {
        #""grant": "\#(tokenExchange)", "subjectTokenFrom": "caller", "clientId": "c", "clientSecret": "s""#
            + (extra.isEmpty ? "" : ", " + extra)
    }

    /// An on-behalf-of exchange, with `extra` keys.
    private func onBehalfOf(_ extra: String = "") -> String {
        #""grant": "\#(jwtBearer)", "assertionFrom": "caller", "clientId": "c", "clientSecret": "s", "clientAuth": "post""#
            + (extra.isEmpty ? "" : ", " + extra)
    }

    // MARK: Accepted

    func testSubjectTokenFromCallerIsATokenExchangeOfTheCallersAccessToken() throws {
        let decoded = try identity(exchange())
        XCTAssertEqual(decoded.grant, .caller(.tokenExchange(subjectTokenType: "urn:ietf:params:oauth:token-type:access_token",
                                                             actor: ExchangedToken())))
        XCTAssertEqual(decoded.grant.type, .tokenExchange)
        XCTAssertEqual(decoded.maxCallers, 10_000)
        XCTAssertEqual(decoded.clientAuth, .basic(id: "c", secret: Secret("s")))
    }

    func testTheSubjectTypeAndTheActorAreTheIdentitys() throws {
        let decoded = try identity(exchange(#""subjectTokenType": "\#(jwtType)", "actorToken": "a", "actorTokenType": "\#(jwtType)""#))
        XCTAssertEqual(decoded.grant, .caller(.tokenExchange(subjectTokenType: jwtType, actor: ExchangedToken(token: Secret("a"), type: jwtType))))
    }

    func testAssertionFromCallerIsAnOnBehalfOfExchange() throws {
        let decoded = try identity(onBehalfOf(#""scope": "api://orders/.default""#))
        XCTAssertEqual(decoded.grant, .caller(.onBehalfOf))
        XCTAssertEqual(decoded.grant.grantType, jwtBearer)
        XCTAssertEqual(decoded.clientAuth, .post(id: "c", secret: Secret("s")))
    }

    func testMaxCallersIsKeptWithinItsBounds() throws {
        XCTAssertEqual(try identity(exchange(#""maxCallers": 500"#)).maxCallers, 500)
        XCTAssertEqual(try identity(exchange(#""maxCallers": 1"#)).maxCallers, 1)
        XCTAssertEqual(try identity(onBehalfOf(#""maxCallers": 1000000"#)).maxCallers, 1_000_000)
        XCTAssertEqual(try identity(exchange(#""dpop": false"#)).dpop, nil)
    }

    // MARK: Refused

    func testEveryWrongUseIsReportedAtItsKey() {
        let te = tokenExchange, jb = jwtBearer
        let table: [(body: String, errors: [String])] = [
            (exchange().replacingOccurrences(of: #""caller""#, with: #""request""#),
             [#"$.identities.x.subjectTokenFrom: expected "caller" (the request's bearer token), got "request""#]),
            (#""clientId": "c", "clientSecret": "s", "subjectTokenFrom": "caller""#,
             ["$.identities.x.subjectTokenFrom: subjectTokenFrom is only used by the \(te) grant, not by the client_credentials grant"]),
            (exchange(#""subjectToken": "literal", "subjectTokenType": "\#(jwtType)""#),
             ["$.identities.x.subjectToken: the subject token is the caller's (subjectTokenFrom); set one of them"]),
            (exchange(#""params": { "subject_token": "literal" }"#),
             ["$.identities.x.params.subject_token: the subject token is the caller's (subjectTokenFrom)"]),
            (exchange(#""params": { "subject_token_type": "\#(jwtType)" }"#),
             ["$.identities.x.params.subject_token_type: it is set from \"subjectTokenType\" (default "
                + "urn:ietf:params:oauth:token-type:access_token) with subjectTokenFrom"]),
            (exchange(#""assertionFrom": "caller""#),
             ["$.identities.x.assertionFrom: set either subjectTokenFrom (token exchange) or assertionFrom (on-behalf-of), not both"]),
            (#""grant": "\#(te)", "assertionFrom": "caller", "clientId": "c", "clientSecret": "s""#,
             ["$.identities.x.assertionFrom: assertionFrom is only used by the \(jb) grant, not by the \(te) grant",
              "$.identities.x.subjectToken: required for the \(te) grant (or params.subject_token)",
              "$.identities.x.subjectTokenType: required for the \(te) grant (or params.subject_token_type)"]),
            (onBehalfOf(#""assertion": "literal""#),
             ["$.identities.x.assertion: the assertion is the caller's token (assertionFrom); set one of them"]),
            (onBehalfOf(#""params": { "requested_token_use": "on_behalf_of" }"#),
             ["$.identities.x.params.requested_token_use: assertionFrom sends requested_token_use=on_behalf_of itself"]),
            (onBehalfOf(#""params": { "assertion": "literal" }"#),
             ["$.identities.x.params.assertion: the assertion is the caller's token (assertionFrom)"]),
            (onBehalfOf(#""subjectTokenType": "\#(jwtType)""#),
             ["$.identities.x.subjectTokenType: subjectTokenType is only used by the token exchange grant, not by an on-behalf-of "
                + "exchange (assertionFrom)"]),
            (exchange(#""maxCallers": 0"#), ["$.identities.x.maxCallers: must be from 1 to 1000000 callers, got 0"]),
            (exchange(#""maxCallers": 1000001"#), ["$.identities.x.maxCallers: must be from 1 to 1000000 callers, got 1000001"]),
            (exchange(#""maxCallers": 2.5"#), ["$.identities.x.maxCallers: expected an integer, got 2.5"]),
            (#""clientId": "c", "clientSecret": "s", "maxCallers": 10"#,
             ["$.identities.x.maxCallers: maxCallers is only used by an identity that exchanges its callers' tokens "
                + "(subjectTokenFrom or assertionFrom)"]),
            (exchange(#""dpop": true"#),
             ["$.identities.x.dpop: dpop is not supported for tokens exchanged per caller (subjectTokenFrom, assertionFrom)"]),
        ]
        for (body, errors) in table {
            XCTAssertEqual(identityErrors(body), errors, body)
        }
    }

    func testAWrongTypeIsReportedLikeAnyOther() {
        let errors = identityErrors(exchange().replacingOccurrences(of: #""subjectTokenFrom": "caller""#, with: #""subjectTokenFrom": true"#))
        XCTAssertEqual(errors.count, 1, "\(errors)")
        XCTAssertTrue(errors.first?.hasPrefix("$.identities.x.subjectTokenFrom: ") == true, "\(errors)")
        XCTAssertEqual(identityErrors(exchange(#""maxCallers": "many""#)).first?.hasPrefix("$.identities.x.maxCallers: "), true)
    }
}
