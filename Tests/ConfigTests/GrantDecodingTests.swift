import Config
import OAuth2
import SafeText
import XCTest

/// Each grant and client authentication decodes into its case with exactly the values it needs;
/// a case that lacks one is reported at the key that would give it.
final class GrantDecodingTests: XCTestCase {
    private let tokenExchangeURI = "urn:ietf:params:oauth:grant-type:token-exchange"
    private let jwtBearerURI = "urn:ietf:params:oauth:grant-type:jwt-bearer"
    private let jwtType = "urn:ietf:params:oauth:token-type:jwt"

    // MARK: Grants

    func testClientCredentials() throws {
        XCTAssertEqual(try identity(#""grant": "client_credentials", "clientId": "c""#).grant, .clientCredentials)
    }

    func testPasswordCarriesUsernameAndPassword() throws {
        let decoded = try identity(#""grant": "password", "clientId": "c", "username": "svc", "password": "pw""#)
        XCTAssertEqual(decoded.grant, .password(username: "svc", password: Secret("pw")))
    }

    func testPasswordFileIsTheGrantsPassword() throws {
        let decoded = try identity(#""grant": "password", "clientId": "c", "username": "svc", "passwordFile": "pw.txt""#,
                                   withFile: "pw.txt", holding: "from-file\n")
        XCTAssertEqual(decoded.grant, .password(username: "svc", password: Secret("from-file")))
    }

    func testRefreshTokenCarriesItsSeed() throws {
        let decoded = try identity(#""grant": "refresh_token", "clientId": "c", "refreshTokenFile": "rt""#,
                                   withFile: "rt", holding: "seed-rt")
        XCTAssertEqual(decoded.grant, .refreshToken(Secret("seed-rt")))
    }

    func testInteractiveGrantsCarryAnOptionalSeed() throws {
        XCTAssertEqual(try identity(#""grant": "authorization_code", "authorizationUrl": "https://idp.example/authorize", "clientId": "c""#).grant, .authorizationCode(seed: nil))
        XCTAssertEqual(try identity(#""grant": "authorization_code", "authorizationUrl": "https://idp.example/authorize", "clientId": "c", "refreshToken": "rt""#).grant,
                       .authorizationCode(seed: Secret("rt")))
        XCTAssertEqual(try identity(#""grant": "device_code", "deviceAuthorizationUrl": "https://idp.example/device", "clientId": "c", "refreshToken": "rt""#).grant,
                       .deviceCode(seed: Secret("rt")))
        XCTAssertEqual(try identity(#""grant": "device_code", "deviceAuthorizationUrl": "https://idp.example/device", "clientId": "c", "refreshToken": "rt""#).grant.interactiveSeed,
                       Secret("rt"))
    }

    func testTokenExchangeCarriesSubjectAndActor() throws {
        let decoded = try identity(#"""
        "grant": "\#(tokenExchangeURI)", "subjectToken": "s", "subjectTokenType": "\#(jwtType)",
        "actorToken": "a", "actorTokenType": "\#(jwtType)"
        """#)
        XCTAssertEqual(decoded.grant, .tokenExchange(subject: ExchangedToken(token: Secret("s"), type: jwtType),
                                                     actor: ExchangedToken(token: Secret("a"), type: jwtType)))
        XCTAssertEqual(decoded.grant.type, .tokenExchange)
    }

    func testTokenExchangeWithItsSubjectInParamsLeavesTheCaseEmpty() throws {
        let decoded = try identity(#"""
        "grant": "\#(tokenExchangeURI)", "params": { "subject_token": "s", "subject_token_type": "\#(jwtType)" }
        """#)
        XCTAssertEqual(decoded.grant, .tokenExchange(subject: ExchangedToken(), actor: ExchangedToken()))
    }

    func testJWTBearerCarriesItsAssertion() throws {
        XCTAssertEqual(try identity(#""grant": "\#(jwtBearerURI)", "assertion": "eyJ.a.b""#).grant,
                       .jwtBearer(assertion: Secret("eyJ.a.b")))
        XCTAssertEqual(try identity(#""grant": "\#(jwtBearerURI)", "params": { "assertion": "eyJ.a.b" }"#).grant,
                       .jwtBearer(assertion: nil))
    }

    func testOtherExtensionGrantsKeepTheirURIAndFields() throws {
        let decoded = try identity(#""grant": "urn:example:grant", "assertion": "x", "params": { "ticket": "t" }"#)
        XCTAssertEqual(decoded.grant, .extension(uri: "urn:example:grant", fields: ExtensionFields(assertion: Secret("x"))))
        XCTAssertEqual(decoded.grant.grantType, "urn:example:grant")
        XCTAssertEqual(decoded.params, ["ticket": "t"])
    }

    func testATokenExchangeWithAnAssertionKeepsEveryFieldAsAnExtensionGrant() throws {
        let decoded = try identity(#""grant": "\#(tokenExchangeURI)", "subjectToken": "s", "subjectTokenType": "\#(jwtType)", "assertion": "x""#)
        XCTAssertEqual(decoded.grant, .extension(uri: tokenExchangeURI, fields: ExtensionFields(
            assertion: Secret("x"), subject: ExchangedToken(token: Secret("s"), type: jwtType))))
        XCTAssertEqual(decoded.grant.type, .tokenExchange)
    }

    // MARK: Client authentication

    func testBasicCarriesIdAndSecret() throws {
        XCTAssertEqual(try identity(#""clientId": "c", "clientSecret": "s", "clientAuth": "basic""#).clientAuth,
                       .basic(id: "c", secret: Secret("s")))
    }

    func testPostCarriesIdAndSecret() throws {
        XCTAssertEqual(try identity(#""clientId": "c", "clientSecretFile": "secret", "clientAuth": "post""#,
                                    withFile: "secret", holding: "from-file").clientAuth,
                       .post(id: "c", secret: Secret("from-file")))
    }

    func testNoneCarriesTheIdOnly() throws {
        XCTAssertEqual(try identity(#""grant": "device_code", "deviceAuthorizationUrl": "https://idp.example/device", "clientId": "tv", "clientAuth": "none""#).clientAuth,
                       .publicClient(id: "tv"))
    }

    func testAnExtensionGrantWithoutClientIsUnidentified() throws {
        let decoded = try identity(#""grant": "\#(jwtBearerURI)", "assertion": "eyJ.a.b""#)
        XCTAssertEqual(decoded.clientAuth, .unidentified)
        XCTAssertNil(decoded.clientAuth.clientId)
    }

    func testAnExtensionGrantWithASecretButNoIdAuthenticatesWithAnEmptyId() throws {
        XCTAssertEqual(try identity(#""grant": "urn:example:grant", "clientSecret": "s""#).clientAuth, .basic(id: "", secret: Secret("s")))
    }

    // MARK: A case missing a value

    func testPasswordWithoutItsPasswordIsReported() {
        XCTAssertEqual(identityErrors(#""grant": "password", "clientId": "c", "username": "svc""#),
                       ["$.identities.x.password: required for the password grant (or passwordFile)"])
    }

    func testPasswordWithoutItsUsernameIsReported() {
        XCTAssertEqual(identityErrors(#""grant": "password", "clientId": "c", "password": "pw""#),
                       ["$.identities.x.username: required for the password grant"])
    }

    func testTokenExchangeWithoutTheSubjectTypeIsReported() {
        XCTAssertEqual(identityErrors(#""grant": "\#(tokenExchangeURI)", "params": { "subject_token": "s" }"#),
                       ["$.identities.x.subjectTokenType: required for the \(tokenExchangeURI) grant (or params.subject_token_type)"])
    }

    func testPostWithoutASecretIsReported() {
        XCTAssertEqual(identityErrors(#""clientId": "c", "clientAuth": "post""#),
                       ["$.identities.x.clientAuth: clientAuth post needs clientSecret or clientSecretFile"])
    }

    func testNoneWithASecretIsReported() {
        XCTAssertEqual(identityErrors(#""clientId": "c", "clientSecret": "s", "clientAuth": "none""#),
                       ["$.identities.x.clientAuth: clientAuth is none but a client secret is set"])
    }
}
