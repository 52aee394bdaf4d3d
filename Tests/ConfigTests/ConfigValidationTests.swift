import Config
import XCTest

/// Every problem is reported with the JSON path of the offending value.
final class ConfigValidationTests: XCTestCase {
    func testUnknownKeyIsReportedWithItsPathAndAHint() {
        let errors = configErrors(#"{ "routes": [ { "upstrem": "http://127.0.0.1:9001" } ] }"#)
        XCTAssertEqual(describe(errors), [
            #"$.routes[0].upstrem: unknown key "upstrem" (did you mean "upstream"?)"#,
            #"$.routes[0].upstream: required key "upstream" is missing"#,
        ])
    }

    func testUnknownKeyFarFromEveryKnownKeyHasNoHint() {
        let errors = configErrors(#"{ "colour": "blue" }"#)
        XCTAssertEqual(describe(errors), [#"$.colour: unknown key "colour""#])
    }

    func testUnknownNestedKeyIsReportedWithItsPath() {
        let errors = configErrors(#"{ "limits": { "maxHeaderByte": 1024 } }"#)
        XCTAssertEqual(describe(errors), [#"$.limits.maxHeaderByte: unknown key "maxHeaderByte" (did you mean "maxHeaderBytes"?)"#])
    }

    func testWrongTypeNamesExpectedAndActualType() {
        let errors = configErrors(#"{ "listen": 8180, "accessLog": "yes", "limits": { "headerTimeoutSeconds": "30" } }"#)
        XCTAssertEqual(describe(errors), [
            "$.listen: expected a string, got number",
            "$.accessLog: expected a boolean (true or false), got string",
            "$.limits.headerTimeoutSeconds: expected a number of seconds, got string",
        ])
    }

    func testErrorsCarryLineAndColumn() {
        let errors = configErrors("{\n  \"listen\": 8180\n}")
        XCTAssertEqual(errors.first?.line, 2)
        XCTAssertEqual(errors.first?.column, 13)
    }

    func testMissingUpstreamIsReported() {
        let errors = configErrors(#"{ "routes": [ { "match": { "pathPrefix": "/a/" } } ] }"#)
        XCTAssertEqual(describe(errors), [#"$.routes[0].upstream: required key "upstream" is missing"#])
    }

    func testRouteNamingAnUnknownIdentityIsReportedWithAHint() {
        let json = #"""
        { "identities": { "orders": { "tokenUrl": "https://idp/token", "clientId": "c", "clientSecret": "s" } },
          "routes": [ { "upstream": "http://127.0.0.1:9001", "identity": "ordres" } ] }
        """#
        XCTAssertEqual(describe(configErrors(json)), [#"$.routes[0].identity: unknown identity "ordres" (did you mean "orders"?)"#])
    }

    func testRouteNamingABrokenIdentityGetsNoSecondError() {
        let json = #"{ "identities": { "orders": { "tokenUrl": 5, "clientId": "c" } }, "routes": [ { "upstream": "http://u", "identity": "orders" } ] }"#
        XCTAssertEqual(describe(configErrors(json)), ["$.identities.orders.tokenUrl: expected a string, got number"])
    }

    func testBadHostPortIsReported() {
        let errors = configErrors(#"{ "listen": "localhost", "admin": "::1:9180" }"#)
        XCTAssertEqual(errors.map(\.path), ["$.listen", "$.admin"])
        XCTAssertTrue(errors[0].message.contains("missing port"), errors[0].message)
        XCTAssertTrue(errors[1].message.contains("in brackets"), errors[1].message)
    }

    func testUpstreamWithUnsupportedSchemeIsReported() {
        let errors = configErrors(#"{ "routes": [ { "upstream": "ftp://files.local" } ] }"#)
        XCTAssertEqual(describe(errors), [#"$.routes[0].upstream: unsupported scheme "ftp" in "ftp://files.local" (expected http or https)"#])
    }

    func testUpstreamWithUserInfoQueryOrFragmentIsReported() {
        let json = #"""
        { "routes": [ { "upstream": "http://user:pw@svc" }, { "upstream": "http://svc/a?x=1" }, { "upstream": "http://svc/#top" } ] }
        """#
        let errors = configErrors(json)
        XCTAssertEqual(errors.map(\.path), ["$.routes[0].upstream", "$.routes[1].upstream", "$.routes[2].upstream"])
        XCTAssertTrue(errors[0].message.contains("user info"))
        XCTAssertFalse(errors[0].message.contains("pw"), "the password in a URL is not echoed")
        XCTAssertTrue(errors[1].message.contains("query"))
        XCTAssertTrue(errors[2].message.contains("fragment"))
    }

    func testBothSecretFormsAreReportedAtTheFileKey() {
        let json = #"""
        { "identities": { "orders": { "tokenUrl": "https://idp/token", "clientId": "c",
          "clientSecret": "s3cr3t-value", "clientSecretFile": "secret.txt" } } }
        """#
        XCTAssertEqual(describe(configErrors(json)),
                       ["$.identities.orders.clientSecretFile: set either clientSecret or clientSecretFile, not both"])
    }

    func testMissingSecretFileIsReportedWithItsPath() {
        let json = #"""
        { "identities": { "orders": { "tokenUrl": "https://idp/token", "clientId": "c", "clientSecretFile": "missing.txt" } } }
        """#
        XCTAssertEqual(describe(configErrors(json, baseDirectory: "/etc/relay")),
                       ["$.identities.orders.clientSecretFile: no such file: /etc/relay/missing.txt"])
    }

    func testUnsetEnvironmentVariableIsReportedWithPathAndName() {
        let errors = configErrors(#"{ "routes": [ { "upstream": "http://${UPSTREAM_HOST}:9001" } ] }"#)
        XCTAssertEqual(describe(errors), ["$.routes[0].upstream: environment variable UPSTREAM_HOST is not set"])
    }

    func testEveryErrorInTheFileIsReportedInDocumentOrder() {
        let json = #"""
        {
          "listen": "nowhere",
          "workers": -1,
          "routes": [
            { "match": { "pathPrefix": "api" }, "upstream": "http://svc" },
            { "upstream": "gopher://svc", "stripPrefix": 1 }
          ],
          "via": "oauth relay"
        }
        """#
        let errors = configErrors(json)
        XCTAssertEqual(errors.map(\.path), [
            "$.listen", "$.workers", "$.routes[0].match.pathPrefix", "$.routes[1].upstream", "$.routes[1].stripPrefix", "$.via",
        ])
        XCTAssertEqual(errors.map(\.line), [2, 3, 5, 6, 6, 8])
    }

    func testInvalidJSONReportsLineAndColumn() {
        let errors = configErrors("{\n  \"listen\": \"127.0.0.1:8180\",\n}")
        XCTAssertEqual(errors.count, 1)
        XCTAssertEqual(errors.first?.path, "$")
        XCTAssertEqual(errors.first?.message, "invalid JSON: trailing comma before '}'")
        XCTAssertEqual(errors.first?.line, 3)
        XCTAssertEqual(errors.first?.column, 1)
    }

    func testMalformedJSONIsRejectedWithAPlace() {
        let documents = [
            "", "{", #"{ "a": }"#, #"{ "a" 1 }"#, #"{ a: 1 }"#, #"{ "a": "unterminated }"#, #"{ "a": "\x" }"#,
            #"{ "a": "\ud800" }"#, #"{ "a": 01 }"#, #"{ "a": 1. }"#, #"{ "a": NaN }"#, #"{ "a": [1,] }"#, "{} {}",
            "{ // comment\n }", "{ \"a\": \"tab\there\" }", String(repeating: "[", count: 100) + String(repeating: "]", count: 100),
        ]
        for document in documents {
            let errors = configErrors(document)
            XCTAssertEqual(errors.count, 1, document)
            XCTAssertEqual(errors.first?.path, "$", document)
            XCTAssertTrue(errors.first?.message.hasPrefix("invalid JSON: ") ?? false, document)
            XCTAssertNotNil(errors.first?.line, document)
        }
    }

    func testBooleanIsNotANumber() {
        XCTAssertEqual(describe(configErrors(#"{ "workers": true }"#)), ["$.workers: expected an integer, got boolean"])
    }

    func testASchemaReferenceMustBeAString() {
        XCTAssertEqual(describe(configErrors(#"{ "$schema": 1 }"#)), [#"$["$schema"]: expected a string, got number"#])
    }

    func testUpstreamResponseTotalSecondsMustBePositive() {
        XCTAssertEqual(describe(configErrors(#"{ "limits": { "upstreamResponseTotalSeconds": 0 } }"#)),
                       ["$.limits.upstreamResponseTotalSeconds: must be a number of seconds greater than 0, got 0"])
    }

    func testDuplicateKeyIsReported() {
        let errors = configErrors(#"{ "listen": "127.0.0.1:1", "listen": "127.0.0.1:2" }"#)
        XCTAssertEqual(describe(errors), [#"$.listen: duplicate key "listen""#])
    }

    func testTopLevelMustBeAnObject() {
        XCTAssertEqual(describe(configErrors("[]")), ["$: expected an object, got array"])
    }

    func testNegativeWorkersIsReported() {
        let errors = configErrors(#"{ "workers": -2 }"#)
        XCTAssertEqual(errors.map(\.path), ["$.workers"])
        XCTAssertTrue(errors[0].message.hasPrefix("must be 0 (one per core)"), errors[0].message)
    }

    func testNonIntegerCountIsReported() {
        XCTAssertEqual(describe(configErrors(#"{ "limits": { "maxHeaderCount": 1.5 } }"#)),
                       ["$.limits.maxHeaderCount: expected an integer, got 1.5"])
    }

    func testZeroTimeoutIsReported() {
        XCTAssertEqual(describe(configErrors(#"{ "limits": { "idleTimeoutSeconds": 0 } }"#)),
                       ["$.limits.idleTimeoutSeconds: must be a number of seconds greater than 0, got 0"])
    }

    func testPathPrefixMustStartWithSlash() {
        XCTAssertEqual(describe(configErrors(routeJSON(#""match": { "pathPrefix": "api/" }"#))),
                       [#"$.routes[0].match.pathPrefix: must start with "/", got "api/""#])
    }

    func testInjectWithBothHeaderAndQueryIsReported() {
        let errors = configErrors(routeJSON(#""inject": { "header": "X-Token", "query": "access_token" }"#))
        XCTAssertEqual(describe(errors), ["$.routes[0].inject: set either query or header (with prefix), not both"])
    }

    func testTLSOnAPlainHTTPUpstreamIsReported() {
        XCTAssertEqual(describe(configErrors(routeJSON(#""tls": { "insecureSkipVerify": true }"#))),
                       ["$.routes[0].tls: tls is set but the upstream is http://"])
    }

    func testHeaderValueWithLineBreakIsReportedWithoutEchoingIt() {
        let errors = configErrors(routeJSON(#""setHeaders": { "X-Key": "abc\r\nEvil: 1" }"#))
        XCTAssertEqual(describe(errors), [#"$.routes[0].setHeaders.X-Key: header value contains a control character (CR, LF, NUL or similar)"#])
    }

    func testInvalidHeaderNameIsReported() {
        let errors = configErrors(routeJSON(#""setHeaders": { "X Key": "v" }"#))
        XCTAssertEqual(describe(errors), [#"$.routes[0].setHeaders["X Key"]: "X Key" is not a valid header name"#])
    }

    func testHopByHopHeaderCannotBeSet() {
        let errors = configErrors(routeJSON(#""setHeaders": { "Transfer-Encoding": "chunked" }"#))
        XCTAssertEqual(errors.map(\.path), ["$.routes[0].setHeaders.Transfer-Encoding"])
    }

    func testSetHeaderMayNotOverwriteTheInjectedTokenHeader() {
        let json = #"""
        { "identities": { "orders": { "tokenUrl": "https://idp/token", "clientId": "c", "clientSecret": "s" } },
          "routes": [ { "upstream": "http://u", "identity": "orders", "setHeaders": { "authorization": "Basic eA==" } } ] }
        """#
        XCTAssertEqual(configErrors(json).map(\.path), ["$.routes[0].setHeaders.authorization"])
    }

    func testTwoRoutesWithTheSameMatchAreReported() {
        let json = #"{ "routes": [ { "upstream": "http://a" }, { "upstream": "http://b", "match": { "pathPrefix": "/" } } ] }"#
        XCTAssertEqual(describe(configErrors(json)),
                       ["$.routes[1].match: routes[0] has the same match, so this route would never be used"])
    }

    func testDuplicateRouteNamesAreReported() {
        let json = #"""
        { "routes": [ { "name": "api", "upstream": "http://a" },
                      { "name": "api", "upstream": "http://b", "match": { "pathPrefix": "/b/" } } ] }
        """#
        XCTAssertEqual(describe(configErrors(json)), [#"$.routes[1].name: route name "api" is already used by routes[0]"#])
    }

    func testRetryStatusOutsideErrorRangeIsReported() {
        XCTAssertEqual(configErrors(routeJSON(#""retryOnStatus": [401, 200]"#)).map(\.path), ["$.routes[0].retryOnStatus[1]"])
    }

    func testErrorsDescriptionListsOneErrorPerLine() {
        do {
            _ = try decodeConfig(#"{ "listen": 1, "workers": "2" }"#)
            XCTFail("expected errors")
        } catch {
            XCTAssertEqual(error.description, """
            $.listen: expected a string, got number (line 1, column 13)
            $.workers: expected an integer, got string (line 1, column 27)
            """)
        }
    }
}
