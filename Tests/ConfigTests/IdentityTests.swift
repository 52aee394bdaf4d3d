import Config
import OAuth2
import SafeText
import XCTest

/// Identities: grants, client authentication and what each grant needs.
final class IdentityTests: XCTestCase {
    func testGrantDefaultsToClientCredentials() throws {
        let identity = try identity(#""clientId": "c", "clientSecret": "s""#)
        XCTAssertEqual(identity.grant, .clientCredentials)
        XCTAssertEqual(identity.grant.grantType, "client_credentials")
        XCTAssertEqual(identity.name, "x")
    }

    func testClientAuthDefaultsToBasicWithASecret() throws {
        XCTAssertEqual(try identity(#""clientId": "c", "clientSecret": "s""#).clientAuth, .basic(id: "c", secret: Secret("s")))
    }

    func testClientAuthDefaultsToNoneWithoutASecret() throws {
        XCTAssertEqual(try identity(#""grant": "authorization_code", "authorizationUrl": "https://idp.example/authorize", "clientId": "c""#).clientAuth, .publicClient(id: "c"))
    }

    func testClientAuthPostIsDecoded() throws {
        XCTAssertEqual(try identity(#""clientId": "c", "clientSecret": "s", "clientAuth": "post""#).clientAuth, .post(id: "c", secret: Secret("s")))
    }

    func testClientAuthBasicWithoutSecretIsReported() {
        XCTAssertEqual(identityErrors(#""clientId": "c", "clientAuth": "basic""#),
                       ["$.identities.x.clientAuth: clientAuth basic needs clientSecret or clientSecretFile"])
    }

    func testUnknownClientAuthIsReported() {
        XCTAssertEqual(identityErrors(#""clientId": "c", "clientAuth": "jwt""#),
                       [#"$.identities.x.clientAuth: expected basic, post, none, private_key_jwt, client_secret_jwt or client_assertion_file, got "jwt""#])
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
        XCTAssertEqual(identity.grant, .refreshToken(Secret("rt")))
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
        XCTAssertEqual(identity.grant.type, .extension("urn:ietf:params:oauth:grant-type:token-exchange"))
        XCTAssertEqual(identity.params["subject_token_type"], "urn:ietf:params:oauth:token-type:jwt")
        XCTAssertEqual(identity.clientAuth, .unidentified)
    }

    func testJWTBearerGrantTakesAnAssertionFile() throws {
        let identity = try identity(#""grant": "urn:ietf:params:oauth:grant-type:jwt-bearer", "assertionFile": "assertion.jwt""#,
                                    withFile: "assertion.jwt", holding: "eyJ.eyJ.sig\n")
        XCTAssertEqual(identity.grant, .jwtBearer(assertion: Secret("eyJ.eyJ.sig")))
    }

    func testDeviceCodeGrantUsesItsURNOnTheWire() throws {
        let identity = try identity(#""grant": "device_code", "deviceAuthorizationUrl": "https://idp.example/device", "clientId": "c""#)
        XCTAssertEqual(identity.grant, .deviceCode(seed: nil))
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

    // MARK: - Token lifetimes, response fields, token exchange

    func testTokenSettingsHaveDefaults() throws {
        let identity = try identity(#""clientId": "c", "clientSecret": "s""#)
        XCTAssertFalse(identity.allowInsecureTokenUrl)
        XCTAssertEqual(identity.defaultExpiresInSeconds, 3600)
        XCTAssertEqual(identity.refreshSkewSeconds, 10)
        XCTAssertEqual(identity.responseFields, ResponseFields(token: "access_token", expiry: "expires_in", type: "token_type"))
    }

    func testTokenSettingsAreDecoded() throws {
        let identity = try identity(#"""
        "clientId": "c", "clientSecret": "s", "allowInsecureTokenUrl": true, "defaultExpiresInSeconds": 120,
        "refreshSkewSeconds": 2.5, "responseFields": { "token": "jwt", "expiry": "ttl", "type": "kind" }
        """#)
        XCTAssertTrue(identity.allowInsecureTokenUrl)
        XCTAssertEqual(identity.defaultExpiresInSeconds, 120)
        XCTAssertEqual(identity.refreshSkewSeconds, 2.5)
        XCTAssertEqual(identity.responseFields, ResponseFields(token: "jwt", expiry: "ttl", type: "kind"))
    }

    func testResponseFieldsNotGivenKeepTheirStandardNames() throws {
        let identity = try identity(#""clientId": "c", "clientSecret": "s", "responseFields": { "token": "token" }"#)
        XCTAssertEqual(identity.responseFields, ResponseFields(token: "token"))
    }

    func testUnknownResponseFieldIsReported() {
        XCTAssertEqual(identityErrors(#""clientId": "c", "clientSecret": "s", "responseFields": { "refresh": "r" }"#),
                       [#"$.identities.x.responseFields.refresh: unknown key "refresh""#])
    }

    func testDefaultExpiresInMustBePositive() {
        XCTAssertEqual(identityErrors(#""clientId": "c", "clientSecret": "s", "defaultExpiresInSeconds": 0"#),
                       ["$.identities.x.defaultExpiresInSeconds: must be a number of seconds greater than 0, got 0"])
    }

    func testTokenExchangeTakesItsSubjectTokenFromAFile() throws {
        let identity = try identity(#"""
        "grant": "urn:ietf:params:oauth:grant-type:token-exchange",
        "subjectTokenFile": "subject.jwt", "subjectTokenType": "urn:ietf:params:oauth:token-type:jwt",
        "actorToken": "actor", "actorTokenType": "urn:ietf:params:oauth:token-type:access_token"
        """#, withFile: "subject.jwt", holding: "eyJ.subject.sig\n")
        XCTAssertEqual(identity.grant, .tokenExchange(
            subject: ExchangedToken(token: Secret("eyJ.subject.sig"), type: "urn:ietf:params:oauth:token-type:jwt"),
            actor: ExchangedToken(token: Secret("actor"), type: "urn:ietf:params:oauth:token-type:access_token")))
    }

    func testATokenNeedsItsTokenType() {
        XCTAssertEqual(identityErrors(#""grant": "urn:example:grant", "subjectToken": "s", "actorToken": "a""#), [
            "$.identities.x.subjectTokenType: required with subjectToken (RFC 8693)",
            "$.identities.x.actorTokenType: required with actorToken (RFC 8693)",
        ])
    }

    func testTokenTypeMustBeAURI() {
        XCTAssertEqual(identityErrors(#""grant": "urn:example:grant", "subjectToken": "s", "subjectTokenType": "jwt""#),
                       [#"$.identities.x.subjectTokenType: expected a token type URI such as urn:ietf:params:oauth:token-type:jwt, got "jwt""#])
    }

    func testTokenExchangeNeedsASubjectTokenAndItsType() {
        XCTAssertEqual(identityErrors(#""grant": "urn:ietf:params:oauth:grant-type:token-exchange""#), [
            "$.identities.x.subjectToken: required for the urn:ietf:params:oauth:grant-type:token-exchange grant (or params.subject_token)",
            "$.identities.x.subjectTokenType: required for the urn:ietf:params:oauth:grant-type:token-exchange grant (or params.subject_token_type)",
        ])
    }

    func testJWTBearerNeedsAnAssertion() {
        XCTAssertEqual(identityErrors(#""grant": "urn:ietf:params:oauth:grant-type:jwt-bearer""#),
                       ["$.identities.x.assertion: required for the urn:ietf:params:oauth:grant-type:jwt-bearer grant (or params.assertion)"])
    }

    func testTokenExchangeKeysAreOnlyForExtensionGrants() {
        XCTAssertEqual(identityErrors(#""clientId": "c", "subjectToken": "s", "subjectTokenType": "urn:t""#), [
            "$.identities.x.subjectToken: subjectToken is only used by extension grants, not by the client_credentials grant",
            "$.identities.x.subjectTokenType: subjectTokenType is only used by extension grants, not by the client_credentials grant",
        ])
    }

    func testParamsCannotSetAFieldThatHasItsOwnKey() {
        XCTAssertEqual(identityErrors(#""clientId": "c", "scope": "a", "params": { "scope": "b", "client_id": "d", "tenant": "t" }"#), [
            #"$.identities.x.params.scope: scope is already set from "scope"; set it in one place"#,
            #"$.identities.x.params.client_id: client_id is already set from "clientId"; set it in one place"#,
        ])
    }
}
