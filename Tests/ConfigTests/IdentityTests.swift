import Config
import XCTest

/// Identities: grants, client authentication and what each grant needs.
final class IdentityTests: XCTestCase {
    private func identity(_ body: String) throws -> Identity {
        let config = try decodeConfig(#"{ "identities": { "x": { "tokenUrl": "https://idp/token", \#(body) } } }"#)
        return try XCTUnwrap(config.identities["x"])
    }

    private func identityErrors(_ body: String) -> [String] {
        describe(configErrors(#"{ "identities": { "x": { "tokenUrl": "https://idp/token", \#(body) } } }"#))
    }

    func testGrantDefaultsToClientCredentials() throws {
        let identity = try identity(#""clientId": "c", "clientSecret": "s""#)
        XCTAssertEqual(identity.grant, .clientCredentials)
        XCTAssertEqual(identity.grant.grantType, "client_credentials")
        XCTAssertEqual(identity.name, "x")
    }

    func testClientAuthDefaultsToBasicWithASecret() throws {
        XCTAssertEqual(try identity(#""clientId": "c", "clientSecret": "s""#).clientAuth, .basic)
    }

    func testClientAuthDefaultsToNoneWithoutASecret() throws {
        XCTAssertEqual(try identity(#""grant": "authorization_code", "clientId": "c""#).clientAuth, .publicClient)
    }

    func testClientAuthPostIsDecoded() throws {
        XCTAssertEqual(try identity(#""clientId": "c", "clientSecret": "s", "clientAuth": "post""#).clientAuth, .post)
    }

    func testClientAuthBasicWithoutSecretIsReported() {
        XCTAssertEqual(identityErrors(#""clientId": "c", "clientAuth": "basic""#),
                       ["$.identities.x.clientAuth: clientAuth basic needs clientSecret or clientSecretFile"])
    }

    func testUnknownClientAuthIsReported() {
        XCTAssertEqual(identityErrors(#""clientId": "c", "clientAuth": "jwt""#),
                       [#"$.identities.x.clientAuth: expected basic, post or none, got "jwt""#])
    }

    func testPasswordGrantNeedsUsernameAndPassword() {
        XCTAssertEqual(identityErrors(#""grant": "password", "clientId": "c""#), [
            #"$.identities.x.username: required for the password grant"#,
            #"$.identities.x.password: required for the password grant (or passwordFile)"#,
        ])
    }

    func testRefreshTokenGrantNeedsARefreshToken() {
        XCTAssertEqual(identityErrors(#""grant": "refresh_token", "clientId": "c""#),
                       ["$.identities.x.refreshToken: required for the refresh_token grant (or refreshTokenFile)"])
    }

    func testRefreshTokenGrantWithSeedIsDecoded() throws {
        let identity = try identity(#""grant": "refresh_token", "clientId": "c", "refreshToken": "rt""#)
        XCTAssertEqual(identity.grant, .refreshToken)
        XCTAssertEqual(identity.refreshToken?.value, "rt")
    }

    func testClientIdIsRequiredForStandardGrants() {
        XCTAssertEqual(identityErrors(#""grant": "client_credentials""#),
                       ["$.identities.x.clientId: required for the client_credentials grant"])
    }

    func testExtensionGrantIsAnAbsoluteURIWithParams() throws {
        let identity = try identity(#"""
        "grant": "urn:ietf:params:oauth:grant-type:token-exchange",
        "params": { "subject_token": "t", "subject_token_type": "urn:ietf:params:oauth:token-type:jwt" }
        """#)
        XCTAssertEqual(identity.grant, .extension("urn:ietf:params:oauth:grant-type:token-exchange"))
        XCTAssertEqual(identity.params["subject_token_type"], "urn:ietf:params:oauth:token-type:jwt")
        XCTAssertNil(identity.clientId)
    }

    func testJWTBearerGrantTakesAnAssertionFile() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write("assertion.jwt", "eyJ.eyJ.sig\n")
        let json = #"""
        { "identities": { "x": { "tokenUrl": "https://idp/token", "grant": "urn:ietf:params:oauth:grant-type:jwt-bearer",
          "assertionFile": "assertion.jwt" } } }
        """#
        XCTAssertEqual(try decodeConfig(json, baseDirectory: directory.path).identities["x"]?.assertion?.value, "eyJ.eyJ.sig")
    }

    func testDeviceCodeGrantUsesItsURNOnTheWire() throws {
        let identity = try identity(#""grant": "device_code", "clientId": "c""#)
        XCTAssertEqual(identity.grant, .deviceCode)
        XCTAssertEqual(identity.grant.grantType, "urn:ietf:params:oauth:grant-type:device_code")
        XCTAssertTrue(identity.grant.isInteractive)
    }

    func testUnknownGrantIsReportedWithAHint() {
        let errors = identityErrors(#""grant": "client_credential", "clientId": "c""#)
        XCTAssertEqual(errors.count, 1)
        XCTAssertTrue(errors[0].hasPrefix(#"$.identities.x.grant: unknown grant "client_credential" (did you mean "client_credentials"?)"#),
                      errors[0])
    }

    func testScopeMayBeAnArray() throws {
        XCTAssertEqual(try identity(#""clientId": "c", "clientSecret": "s", "scope": ["a", "b"]"#).scope, "a b")
    }

    func testResourceMayBeASingleString() throws {
        XCTAssertEqual(try identity(#""clientId": "c", "clientSecret": "s", "resource": "https://api/""#).resource, ["https://api/"])
    }

    func testTokenURLMustBeHTTP() {
        let errors = configErrors(#"{ "identities": { "x": { "tokenUrl": "idp/token", "clientId": "c" } } }"#)
        XCTAssertEqual(errors.map(\.path), ["$.identities.x.tokenUrl"])
    }

    func testMissingTokenURLIsReported() {
        XCTAssertEqual(describe(configErrors(#"{ "identities": { "x": { "clientId": "c" } } }"#)),
                       [#"$.identities.x.tokenUrl: required key "tokenUrl" is missing"#])
    }

    func testIdentityNameWithSpaceIsReportedInBracketNotation() {
        let errors = configErrors(#"{ "identities": { "my id": { "tokenUrl": "https://idp/t", "clientId": "c" } } }"#)
        XCTAssertEqual(errors.map(\.path), [#"$.identities["my id"]"#])
    }

    func testGrantTypeCannotBeSetThroughParams() {
        XCTAssertEqual(identityErrors(#""clientId": "c", "params": { "grant_type": "password" }"#),
                       [#"$.identities.x.params.grant_type: grant_type is set from "grant"; use "grant" instead"#])
    }
}
