import Config
import XCTest

/// `${NAME}` in any string value.
final class InterpolationTests: XCTestCase {
    private func via(_ template: String, _ environment: [String: String] = [:]) throws -> String {
        try decodeConfig(#"{ "via": "\#(template)" }"#, environment: environment).via
    }

    func testVariableIsReplacedByItsValue() throws {
        XCTAssertEqual(try via("relay-${SITE}", ["SITE": "eu1"]), "relay-eu1")
    }

    func testSeveralVariablesInOneString() throws {
        let config = try decodeConfig(#"{ "listen": "${HOST}:${PORT}" }"#, environment: ["HOST": "0.0.0.0", "PORT": "8080"])
        XCTAssertEqual(config.listen, HostPort(host: "0.0.0.0", port: 8080))
    }

    func testDoubleDollarBraceIsALiteralDollarBrace() throws {
        let route = try XCTUnwrap(decodeConfig(routeJSON(#""setHeaders": { "X-Template": "$${NOT_A_VAR} costs $5" }"#)).routes.first)
        XCTAssertEqual(route.setHeaders.first?.value, "${NOT_A_VAR} costs $5")
    }

    func testDefaultIsUsedWhenTheVariableIsUnset() throws {
        XCTAssertEqual(try via("${SITE:-local}"), "local")
        XCTAssertEqual(try via("${SITE:-local}", ["SITE": "eu1"]), "eu1")
    }

    func testSubstitutedValueIsNotExpandedAgain() throws {
        let route = try XCTUnwrap(decodeConfig(routeJSON(#""setHeaders": { "X-A": "${A}" }"#), environment: ["A": "${B}"]).routes.first)
        XCTAssertEqual(route.setHeaders.first?.value, "${B}")
    }

    func testEveryUnsetVariableInAStringIsNamed() {
        XCTAssertEqual(describe(configErrors(#"{ "listen": "${HOST}:${PORT}" }"#)),
                       ["$.listen: environment variable HOST is not set; environment variable PORT is not set"])
    }

    func testInterpolationAppliesInsideNestedObjectsAndArrays() throws {
        let json = #"""
        { "identities": { "x": { "tokenUrl": "${IDP}/token", "clientId": "c", "clientSecret": "${SECRET}", "resource": ["${RES}"] } } }
        """#
        let identity = try XCTUnwrap(decodeConfig(json, environment: ["IDP": "https://idp", "SECRET": "s", "RES": "urn:x"]).identities["x"])
        XCTAssertEqual(identity.tokenUrl?.host, "idp")
        XCTAssertEqual(identity.clientAuth.secret?.value, "s")
        XCTAssertEqual(identity.resource, ["urn:x"])
    }

    func testUnterminatedReferenceIsReported() {
        let errors = configErrors(#"{ "via": "a${B" }"#)
        XCTAssertEqual(errors.map(\.path), ["$.via"])
        XCTAssertTrue(errors.first?.message.hasPrefix("unterminated \"${\"") ?? false, "\(errors)")
    }

    func testInvalidVariableNameIsReported() {
        let errors = configErrors(#"{ "via": "${1X}" }"#)
        XCTAssertEqual(describe(errors), [#"$.via: invalid variable name in "${1X}" (expected letters, digits and _)"#])
    }

    func testLoneDollarIsKept() throws {
        XCTAssertEqual(try via("a$b$"), "a$b$")
    }

    /// Found by the config fuzzer: an error about an interpolated value quoted the variable's
    /// value, which may be a key (here in a token URL).
    func testAnErrorAboutAnInterpolatedValueShowsTheReferenceNotTheValue() {
        let errors = configErrors(#"{"identities":{"o":{"tokenUrl":"https:/${KEY}","clientId":"c"}}}"#,
                                  environment: ["KEY": "k3y-that-must-not-show"])
        XCTAssertFalse(errors.isEmpty)
        for error in errors {
            XCTAssertFalse(error.description.contains("k3y-that-must-not-show"), error.description)
        }
        XCTAssertTrue(errors.contains { $0.message.contains("${KEY}") }, describe(errors).joined(separator: "\n"))
    }
}
