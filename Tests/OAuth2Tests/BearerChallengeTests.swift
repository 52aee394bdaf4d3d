import OAuth2
import XCTest

/// `WWW-Authenticate` read as RFC 7235 §4.1 writes it, for the Bearer and DPoP challenges
/// RFC 6750 §3, RFC 9728 §5.1 and RFC 9470 §3 define.
final class BearerChallengeTests: XCTestCase {
    func testRFC6750Examples() {
        XCTAssertEqual(BearerChallenge.parse([#"Bearer realm="example""#]), BearerChallenge(realm: "example"))
        XCTAssertEqual(BearerChallenge.parse([#"Bearer realm="example", error="invalid_token", error_description="The access token expired""#]),
                       BearerChallenge(realm: "example", error: "invalid_token", errorDescription: "The access token expired"))
        let scope = BearerChallenge.parse([#"Bearer realm="example", error="insufficient_scope", scope="read write  admin""#])
        XCTAssertEqual(scope?.scope, ["read", "write", "admin"])
        XCTAssertEqual(scope?.stepUp, StepUp(scope: ["read", "write", "admin"]))
    }

    func testRFC9728ResourceMetadata() {
        let challenge = BearerChallenge.parse([
            #"Bearer resource_metadata="https://resource.example.com/.well-known/oauth-protected-resource""#,
        ])
        XCTAssertEqual(challenge?.resourceMetadata, "https://resource.example.com/.well-known/oauth-protected-resource")
        XCTAssertNil(challenge?.stepUp)
    }

    func testRFC9470Examples() {
        let acr = BearerChallenge.parse([#"Bearer error="insufficient_user_authentication", "#
            + #"error_description="A different authentication level is required", acr_values="myACR""#])
        XCTAssertEqual(acr?.stepUp, StepUp(acrValues: ["myACR"]))
        let age = BearerChallenge.parse([#"Bearer error="insufficient_user_authentication", "#
            + #"error_description="More recent authentication is required", max_age="5""#])
        XCTAssertEqual(age?.maxAge, 5)
        XCTAssertEqual(age?.stepUp, StepUp(maxAge: 5))
    }

    func testFirstBearerOrDPoPAmongSeveralChallengesAndValues() {
        // RFC 7235 §4.1's own example, then a Bearer in the same value.
        let mixed = #"Newauth realm="apps", type=1, title="Login to \"apps\"", Basic realm="simple", Bearer realm="api""#
        XCTAssertEqual(BearerChallenge.parse([mixed])?.realm, "api")
        XCTAssertEqual(BearerChallenge.parse(["Basic realm=\"x\"", "DPoP algs=\"ES256\", realm=\"d\"", "Bearer realm=\"b\""]),
                       BearerChallenge(scheme: "DPoP", realm: "d"))
        XCTAssertEqual(BearerChallenge.parse(["Negotiate abc+/def==, Bearer realm=\"after-token68\""])?.realm, "after-token68")
        XCTAssertNil(BearerChallenge.parse(["Basic realm=\"simple\"", "Negotiate"]))
        XCTAssertNil(BearerChallenge.parse([]))
    }

    func testParseAllReadsEveryBearerAndDPoPChallengeInOrder() {
        let values = [#"Basic realm="x", DPoP algs="ES256", realm="d", Bearer realm=a b"#, "Negotiate abc==",
                      #"bearer realm="b", error="insufficient_scope", scope="more""#, #"Bearer realm="b2", REALM="again""#]
        XCTAssertEqual(BearerChallenge.parseAll(values),
                       [BearerChallenge(scheme: "DPoP", realm: "d"),
                        BearerChallenge(scheme: "bearer", realm: "b", error: "insufficient_scope", scope: ["more"])],
                       "broken ones (text where a comma should be, a name twice) left out")
        XCTAssertEqual(BearerChallenge.parse(values), BearerChallenge.parseAll(values).first)
        XCTAssertEqual(BearerChallenge.parseAll(["Basic realm=\"x\"", "Negotiate"]), [])
    }

    func testSchemeAndNamesInAnyCaseTokensUnquotedAndEscapes() {
        let challenge = BearerChallenge.parse([#"bEARER REALM=plain , Error = "invalid_token", "#
            + #"error_description="say \"hi\" \\ bye", SCOPE=openid"#])
        XCTAssertEqual(challenge, BearerChallenge(scheme: "bEARER", realm: "plain", error: "invalid_token",
                                                  errorDescription: #"say "hi" \ bye"#, scope: ["openid"]))
        XCTAssertEqual(BearerChallenge.parse(["Bearer"]), BearerChallenge(), "a challenge without parameters")
        XCTAssertEqual(BearerChallenge.parse(["Bearer ,, realm=\"a\" ,"])?.realm, "a", "empty list elements are allowed")
    }

    /// RFC 6749 §3.3: a scope token is %x21 / %x23-5B / %x5D-7E; an upstream's scope or
    /// acr_values with anything else (sent escaped, or as UTF-8) asks for no step-up.
    func testScopeAndAcrValuesMustBeScopeTokens() {
        let refused: [(String, String)] = [
            (#"Bearer error="insufficient_scope", scope="read caf\#u{e9}""#, "a non-ASCII scope token"),
            (#"Bearer error="insufficient_scope", scope="read a\\b""#, "a backslash in a scope token"),
            (#"Bearer error="insufficient_scope", scope="read a\"b""#, "a quote in a scope token"),
            ("Bearer error=\"insufficient_scope\", scope=\"read\twrite\"", "a tab between scope tokens"),
            (#"Bearer error="insufficient_user_authentication", acr_values="urn:\#u{e9}""#, "a non-ASCII acr value"),
            (#"Bearer error="insufficient_user_authentication", acr_values="a\"b", max_age=0"#, "a quote in an acr value"),
            (#"Bearer error="insufficient_user_authentication", scope="a\\b", acr_values="mfa""#, "a backslash in the scope"),
        ]
        for (value, why) in refused {
            let challenge = BearerChallenge.parse([value])
            XCTAssertNotNil(challenge, why)
            XCTAssertNil(challenge?.stepUp, why)
            XCTAssertEqual(challenge?.malformedScopeTokens, true, why)
            XCTAssertTrue(challenge?.scope.isEmpty == true || challenge?.acrValues.isEmpty == true, why)
        }
        XCTAssertEqual(BearerChallenge.parse([#"Bearer error="insufficient_scope", scope="read:all !#[]~ ]""#])?.stepUp,
                       StepUp(scope: ["read:all", "!#[]~", "]"]), "every character RFC 6749 §3.3 allows")
        XCTAssertEqual(BearerChallenge.parse([#"Bearer error="insufficient_user_authentication", acr_values="urn:mfa phr""#])?.stepUp,
                       StepUp(acrValues: ["urn:mfa", "phr"]))
    }

    func testMaxAgeMustBeDigits() {
        for bad in ["-1", "5s", "", "1.5"] {
            XCTAssertNil(BearerChallenge.parse(["Bearer max_age=\"\(bad)\""])?.maxAge, bad)
        }
    }

    func testMaxAgeAboveTheLimitCountsAsAbsent() {
        XCTAssertEqual(BearerChallenge.parse(["Bearer max_age=1000000000"])?.maxAge, 1_000_000_000)
        for huge in ["1000000001", "9223372036854775807", "99999999999999999999999"] {
            let challenge = BearerChallenge.parse(["Bearer error=\"insufficient_user_authentication\", max_age=\(huge)"])
            XCTAssertNil(challenge?.maxAge, huge)
            XCTAssertNil(challenge?.stepUp, "\(huge): nothing left to step up for")
        }
    }

    /// Each malformed challenge is skipped whole; the well-formed Bearer after it is read.
    func testMalformedChallengesAreSkipped() {
        let refused: [(String, String)] = [
            (#"Bearer realm="unterminated"#, "an unterminated quoted string"),
            (#"Bearer realm="#, "a parameter without a value"),
            (#"Bearer realm=a b"#, "text where a comma should be"),
            (#"Bearer realm="a" "b""#, "a quoted string where a comma should be"),
            (#"Bearer abc=="#, "a token68 where RFC 6750 wants parameters"),
            (#"Bearer realm="a", =x"#, "a parameter without a name"),
            ("Bearer realm=\"a\u{01}b\"", "a control character in a quoted string"),
            (#"Bearer"realm""#, "no space after the scheme"),
            (#"Bearer realm="a", error="x\""#, "an escape eating the closing quote"),
            // Read from where the string broke, its text would be a challenge of its own ("inside").
            ("Bearer realm=\"a\u{7F}, Bearer realm=inside, e=\"\"", "a DEL in a quoted string"),
            ("Bearer realm=\"a\u{01}, Bearer realm=inside, e=\"\"", "a control character in a quoted string, before a comma"),
            ("Bearer realm=\"a\\\u{01}, Bearer realm=inside, e=\"\"", "an escaped control character in a quoted string"),
            ("Bearer realm=\"a\u{7F}, Bearer realm=inside", "a DEL in a quoted string without its closing quote"),
            (#"Bearer realm="first", REALM="second""#, "a parameter given twice (RFC 7235 §2.1)"),
            (#"Bearer error="insufficient_scope", scope="a", Scope=b"#, "a parameter given twice, in another case"),
        ]
        for (value, why) in refused {
            XCTAssertNil(BearerChallenge.parse([value]), why)
            XCTAssertEqual(BearerChallenge.parse([value, #"Bearer realm="good""#])?.realm, "good", why)
        }
        // In the same value, a broken challenge does not take the next one with it.
        XCTAssertEqual(BearerChallenge.parse([#"Bearer realm=a b, Bearer realm="next""#])?.realm, "next")
        XCTAssertEqual(BearerChallenge.parse([#"Bearer realm="a" "b", Bearer realm="next""#])?.realm, "next")
        XCTAssertEqual(BearerChallenge.parse([#"Bearer scope="a", scope="b", Bearer realm="next""#])?.realm, "next")
        // A broken quoted string is skipped to its closing quote, then to the next comma.
        XCTAssertEqual(BearerChallenge.parse(["Bearer realm=\"a\u{7F}, Bearer realm=inside, e=\", Bearer realm=\"next\""])?.realm,
                       "next")
        XCTAssertEqual(BearerChallenge.parse(["Bearer realm=\"a\\\u{01}, Bearer realm=inside, e=\" , Bearer realm=\"next\""])?.realm,
                       "next")
    }
}
