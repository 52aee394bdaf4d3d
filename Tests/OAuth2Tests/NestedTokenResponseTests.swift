import JSON
import OAuth2
import XCTest

/// Token responses whose members are nested (`responseFields` with dotted paths) or whose token
/// type has the IdP's own name (`typeValues`), as Slack answers: a user token under
/// `authed_user` with `token_type: "user"`, its refreshes at the top level.
final class NestedTokenResponseTests: XCTestCase {
    /// Slack's answer to a code exchange asking for bot and user scopes (oauth.v2.access).
    private let slackExchange = #"""
    {"ok":true,"app_id":"A1","access_token":"xoxb-bot","token_type":"bot","refresh_token":"xoxe-bot","expires_in":43200,
     "authed_user":{"id":"U1","scope":"search:read","access_token":"xoxp-user","token_type":"user",
                    "refresh_token":"xoxe-user","expires_in":43100},
     "team":{"id":"T1","name":"Acme"}}
    """#

    private let slackUser = TokenResponseFormat(fields: ResponseFields(
        token: try! ResponseMember(alternatives: ["authed_user.access_token", "access_token"]),
        expiry: try! ResponseMember(alternatives: ["authed_user.expires_in", "expires_in"]),
        type: try! ResponseMember(alternatives: ["authed_user.token_type", "token_type"]),
        refreshToken: try! ResponseMember(alternatives: ["authed_user.refresh_token", "refresh_token"]),
        typeValues: ["user": "Bearer", "bot": "Bearer"]))

    private func reason(_ body: String, format: TokenResponseFormat, file: StaticString = #filePath, line: UInt = #line) -> String? {
        do {
            let token = try TokenResponse.parse(reply(200, body), format: format, unixTime: 1_700_000_000)
            XCTFail("expected an error, got \(token)", file: file, line: line)
        } catch {
            if case .invalidTokenResponse(_, _, let reason) = error { return reason }
            XCTFail("expected an invalid token response, got \(error)", file: file, line: line)
        }
        return nil
    }

    private func nested(_ dotted: String) -> TokenResponseFormat {
        TokenResponseFormat(fields: ResponseFields(token: try! ResponseMember(dotted: dotted)))
    }

    func testTheUserTokenOfASlackCodeExchangeIsTakenNotTheBots() throws {
        let token = try parsedToken(reply(200, slackExchange), format: slackUser)
        XCTAssertEqual(token.accessToken.value, "xoxp-user")
        XCTAssertEqual(token.tokenType, "Bearer")
        XCTAssertEqual(token.expiresIn, 43100)
        XCTAssertEqual(token.expirySource, .expiresIn)
        XCTAssertEqual(token.refreshToken?.value, "xoxe-user")
    }

    func testASlackRefreshAnswersAtTheTopLevelAndTheSecondPathsReadIt() throws {
        let refresh = #"{"ok":true,"access_token":"xoxe.xoxp-2","token_type":"user","refresh_token":"xoxe-2","expires_in":43200}"#
        let token = try parsedToken(reply(200, refresh), format: slackUser)
        XCTAssertEqual(token.accessToken.value, "xoxe.xoxp-2")
        XCTAssertEqual(token.tokenType, "Bearer")
        XCTAssertEqual(token.expiresIn, 43200)
        XCTAssertEqual(token.refreshToken?.value, "xoxe-2")
    }

    func testAnAuthedUserWithoutATokenIsRefusedNotAnsweredWithTheBotToken() {
        let exchange = #"{"ok":true,"access_token":"xoxb-bot","token_type":"bot","authed_user":{"id":"U1"}}"#
        XCTAssertEqual(reason(exchange, format: slackUser),
                       "no authed_user.access_token field (fields of authed_user: id); the answer has authed_user, "
                       + "so no other alternative of authed_user.access_token or access_token is read")
    }

    func testAUserTokenWithoutRefreshTokenKeepsNoneRatherThanTheBots() throws {
        let exchange = #"""
        {"ok":true,"access_token":"xoxb-bot","token_type":"bot","refresh_token":"xoxe-bot","expires_in":43200,"scope":"chat:write",
         "authed_user":{"id":"U1","access_token":"xoxp-user","token_type":"user"}}
        """#
        var fields = slackUser.fields
        fields.scope = try ResponseMember(alternatives: ["authed_user.scope", "scope"])
        let token = try parsedToken(reply(200, exchange), format: TokenResponseFormat(fields: fields))
        XCTAssertEqual(token.accessToken.value, "xoxp-user")
        XCTAssertNil(token.refreshToken)
        XCTAssertEqual(token.expirySource, .defaultLifetime)
        XCTAssertNil(token.scope)
    }

    func testTheScopeIsTheTokensAlternatives() throws {
        var fields = slackUser.fields
        fields.scope = try ResponseMember(alternatives: ["authed_user.scope", "scope"])
        let format = TokenResponseFormat(fields: fields)
        XCTAssertEqual(try parsedToken(reply(200, slackExchange), format: format).scope, "search:read")
        let refresh = #"{"ok":true,"access_token":"xoxp-2","token_type":"user","scope":"search:read,users:read"}"#
        XCTAssertEqual(try parsedToken(reply(200, refresh), format: format).scope, "search:read,users:read")
        // A scope of one path is read whatever the token's alternative.
        let topScope = #"{"scope":"top","authed_user":{"access_token":"xoxp-user","scope":"search:read"}}"#
        XCTAssertEqual(try parsedToken(reply(200, topScope), format: slackUser).scope, "top")
    }

    func testAMemberIsReadAtTheAlternativeGiven() throws {
        let members = try XCTUnwrap(JSONValue(parsing: Array(#"{"a":{"b":1},"b":2}"#.utf8)).dictionary)
        let member = try ResponseMember(alternatives: ["a.b", "b"])
        XCTAssertEqual(member.lookup(in: members, alternative: 0), .value(.integer(1), path: "a.b"))
        XCTAssertEqual(member.lookup(in: members, alternative: 1), .value(.integer(2), path: "b"))
        XCTAssertEqual(ResponseMember("b").lookup(in: members, alternative: 1), .value(.integer(2), path: "b"))
        XCTAssertEqual(try ResponseMember(alternatives: ["x.b", "b"]).resolve(in: members).alternative, 1)
        XCTAssertEqual(try ResponseMember(alternatives: ["a.c", "b"]).resolve(in: members).alternative, 0)
    }

    func testAMappedTypeIsMatchedCaseInsensitively() throws {
        let format = TokenResponseFormat(fields: ResponseFields(typeValues: ["user": "Bearer"]))
        XCTAssertEqual(try parsedToken(reply(200, #"{"access_token":"a","token_type":"User"}"#), format: format).tokenType, "Bearer")
    }

    func testAnUnmappedOwnTypeIsStillRefusedNamingThePathItCameFrom() {
        let format = TokenResponseFormat(fields: ResponseFields(type: "authed_user.token_type", typeValues: ["bot": "Bearer"]))
        XCTAssertEqual(reason(#"{"access_token":"a","authed_user":{"token_type":"user"}}"#, format: format),
                       #"authed_user.token_type "user" is not Bearer or DPoP, the only types the relay can send "#
                        + "(responseFields.typeValues maps an IdP's own names for them)")
    }

    func testATypeMappedToDPoPNeedsTheIdentitysKey() throws {
        let fields = ResponseFields(typeValues: ["pop": "DPoP"])
        XCTAssertEqual(reason(#"{"access_token":"a","token_type":"pop"}"#, format: TokenResponseFormat(fields: fields)),
                       "token_type DPoP, but the identity has no dpop key to prove possession with")
        let keyed = TokenResponseFormat(fields: fields, acceptsDPoP: true)
        XCTAssertEqual(try parsedToken(reply(200, #"{"access_token":"a","token_type":"pop"}"#), format: keyed).tokenType, "DPoP")
    }

    // MARK: - The parse of nested members: present, missing, wrong type, no object on the way

    func testANestedTokenThreeLevelsDown() throws {
        let token = try parsedToken(reply(200, #"{"data":{"grant":{"token":"deep-1"}},"token":"top"}"#), format: nested("data.grant.token"))
        XCTAssertEqual(token.accessToken.value, "deep-1")
    }

    func testAMissingNestedTokenNamesThePathAndTheMembersWhereItStopped() {
        XCTAssertEqual(reason(#"{"ok":true,"authed_user":{"id":"U1","scope":"x"}}"#, format: nested("authed_user.access_token")),
                       "no authed_user.access_token field (fields of authed_user: id, scope)")
        XCTAssertEqual(reason(#"{"ok":true,"team":{}}"#, format: nested("authed_user.access_token")),
                       "no authed_user.access_token field (fields: ok, team)")
    }

    func testAMissingTokenNamesEveryAlternative() {
        XCTAssertEqual(reason(#"{"ok":true}"#, format: slackUser), "no authed_user.access_token or access_token field (fields: ok)")
    }

    func testANestedNullCountsAsMissingOnTheWay() {
        XCTAssertEqual(reason(#"{"authed_user":null}"#, format: nested("authed_user.access_token")),
                       "no authed_user.access_token field (fields: authed_user)")
    }

    func testANestedTokenOfTheWrongTypeIsRefused() {
        for value in ["7", "true", "null", "[]", "{}", #""""#] {
            XCTAssertEqual(reason(#"{"authed_user":{"access_token":\#(value)}}"#, format: nested("authed_user.access_token")),
                           "authed_user.access_token is not a non-empty string", value)
        }
    }

    func testANonObjectOnTheWayIsNamed() {
        let cases = [(#""xoxp""#, "a string"), ("[1]", "an array"), ("3", "a number"), ("false", "a boolean")]
        for (value, held) in cases {
            XCTAssertEqual(reason(#"{"authed_user":\#(value)}"#, format: nested("authed_user.access_token")),
                           "authed_user holds \(held), not an object, so authed_user.access_token cannot be read", value)
        }
    }

    func testAnAlternativeWinsOverAFirstPathThatRunsIntoANonObject() throws {
        let format = TokenResponseFormat(fields: ResponseFields(token: try ResponseMember(alternatives: ["data.token", "token"])))
        XCTAssertEqual(try parsedToken(reply(200, #"{"data":"none","token":"t-2"}"#), format: format).accessToken.value, "t-2")
    }

    func testANullFirstPathGivesWayToAPresentSecond() throws {
        let format = TokenResponseFormat(fields: ResponseFields(token: try ResponseMember(alternatives: ["user_token", "token"])))
        XCTAssertEqual(try parsedToken(reply(200, #"{"user_token":null,"token":"t-3"}"#), format: format).accessToken.value, "t-3")
    }

    func testNestedExpiryOfTheWrongTypeIsIgnoredWithAWarningNamingItsPath() throws {
        let format = TokenResponseFormat(fields: ResponseFields(expiry: "authed_user.expires_in"))
        let token = try parsedToken(reply(200, #"{"access_token":"a","authed_user":{"expires_in":"soon"}}"#), format: format)
        XCTAssertEqual(token.expirySource, .defaultLifetime)
        XCTAssertEqual(token.lifetimeWarnings, [.ignored(field: "authed_user.expires_in", reason: .notANumber)])
    }

    func testANestedExpiryBehindANonObjectCountsAsAbsent() throws {
        let format = TokenResponseFormat(fields: ResponseFields(expiry: "authed_user.expires_in"))
        let token = try parsedToken(reply(200, #"{"access_token":"a","authed_user":[60]}"#), format: format)
        XCTAssertEqual(token.expirySource, .defaultLifetime)
        XCTAssertEqual(token.lifetimeWarnings, [])
    }

    func testANestedTypeAndRefreshTokenOfTheWrongTypeCountAsAbsent() throws {
        let format = TokenResponseFormat(fields: ResponseFields(type: "u.token_type", refreshToken: "u.refresh_token"))
        let token = try parsedToken(reply(200, #"{"access_token":"a","refresh_token":"top","u":{"token_type":5,"refresh_token":5}}"#),
                                    format: format)
        XCTAssertEqual(token.tokenType, "Bearer")
        XCTAssertNil(token.refreshToken, "the configured member is the refresh token, not the top-level one")
    }

    func testAnErrorBodyNamingANestedTokenMemberIsNeverQuoted() {
        let format = TokenResponseFormat(fields: ResponseFields(token: "grant.bearer_value"))
        do {
            let token = try TokenResponse.parse(reply(500, #"{"grant":{"bearer_value":"secret-ish"}}"#), format: format, unixTime: 0)
            XCTFail("expected an error, got \(token)")
        } catch {
            guard case .unexpectedStatus(500, _, let excerpt, _) = error else { return XCTFail("\(error)") }
            XCTAssertNil(excerpt)
        }
    }

    // MARK: - ResponseMember

    func testAMemberPathIsSplitAtEveryDot() throws {
        XCTAssertEqual(try ResponseMember(dotted: "a.b.c").paths, [["a", "b", "c"]])
        XCTAssertEqual(try ResponseMember(alternatives: ["a.b", "c"]).description, "a.b or c")
        XCTAssertEqual(try ResponseMember(alternatives: ["a.b", "c"]).memberNames, ["b", "c"])
    }

    func testAnEmptyNameInAPathIsRefused() {
        for dotted in ["", ".", "a.", ".a", "a..b"] {
            XCTAssertThrowsError(try ResponseMember(dotted: dotted), dotted)
        }
    }

    func testTheLookupOfEachShape() throws {
        let members = try XCTUnwrap(JSONValue(parsing: Array(#"{"a":{"b":1,"n":null},"s":"x"}"#.utf8)).dictionary)
        XCTAssertEqual(try ResponseMember(dotted: "a.b").lookup(in: members), .value(.integer(1), path: "a.b"))
        XCTAssertEqual(try ResponseMember(dotted: "a.n").lookup(in: members), .value(.null, path: "a.n"))
        XCTAssertEqual(try ResponseMember(dotted: "a.c").lookup(in: members), .missing(object: "a", fields: ["b", "n"]))
        XCTAssertEqual(try ResponseMember(dotted: "z.c").lookup(in: members), .missing(object: nil, fields: ["a", "s"]))
        XCTAssertEqual(try ResponseMember(dotted: "s.c").lookup(in: members), .notAnObject(prefix: "s", held: "a string"))
        XCTAssertEqual(try ResponseMember(alternatives: ["s.c", "z", "a.b"]).lookup(in: members), .value(.integer(1), path: "a.b"))
    }
}
