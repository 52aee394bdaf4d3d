import Crypto
import Endpoints
import JOSE
import JSON
import OAuth2
import SafeText
import XCTest

/// A Google service account's JWTs, exactly as Google documents them (header and every claim), and
/// the token request that carries the jwt-bearer assertion; the self-signed token's answer.
final class ServiceAccountRequestTests: XCTestCase {
    private typealias Fixture = ServiceAccountFixture
    private let now: Int64 = 1_700_000_000
    private let scope = "https://www.googleapis.com/auth/cloud-platform https://www.googleapis.com/auth/pubsub"

    private func verified(_ jwt: String) throws -> JWTClaims {
        let key = try JWSVerificationKey(publicKey: Fixture.rsa.publicKey, allowing: [.rs256])
        return try JWT.verifiedClaims(jwt, key: key, rules: JWTValidationRules(issuer: Fixture.clientEmail), now: now)
    }

    private let header: [String: JSONValue] = ["alg": .string("RS256"), "typ": .string("JWT"), "kid": .string(ServiceAccountFixture.keyID)]

    // MARK: The JWTs

    func testTheGrantAssertionHasGooglesHeaderAndClaimsAndNothingElse() throws {
        let jwt = try ServiceAccountJWT.assertion(try Fixture.key(), scope: scope, subject: nil,
                                                  audience: "https://oauth2.googleapis.com/token", issuedAt: now)
        let (header, claims) = try jwtParts(jwt)
        XCTAssertEqual(header, self.header)
        XCTAssertEqual(claims, ["iss": .string(Fixture.clientEmail), "scope": .string(scope),
                                "aud": .string("https://oauth2.googleapis.com/token"), "iat": .integer(now), "exp": .integer(now + 3600)])
        XCTAssertEqual(try verified(jwt).issuedAt, now)
    }

    func testDomainWideDelegationPutsTheUserInSub() throws {
        let jwt = try ServiceAccountJWT.assertion(try Fixture.key(), scope: scope, subject: "admin@example.com",
                                                  audience: "https://oauth2.googleapis.com/token", issuedAt: now)
        let claims = try jwtParts(jwt).claims
        XCTAssertEqual(claims["sub"], .string("admin@example.com"))
        XCTAssertEqual(Set(claims.keys), ["iss", "sub", "scope", "aud", "iat", "exp"])
    }

    func testASelfSignedTokenForAnAPINamesItAsAudienceAndTheAccountAsSubject() throws {
        let jwt = try ServiceAccountJWT.accessToken(try Fixture.key(), audience: "https://pubsub.googleapis.com/", issuedAt: now)
        let (header, claims) = try jwtParts(jwt)
        XCTAssertEqual(header, self.header)
        XCTAssertEqual(claims, ["iss": .string(Fixture.clientEmail), "sub": .string(Fixture.clientEmail),
                                "aud": .string("https://pubsub.googleapis.com/"), "iat": .integer(now), "exp": .integer(now + 3600)])
        XCTAssertEqual(try verified(jwt).subject, Fixture.clientEmail)
    }

    func testASelfSignedTokenWithAScopeHasNoAudience() throws {
        let jwt = try ServiceAccountJWT.accessToken(try Fixture.key(), scope: scope, issuedAt: now)
        let claims = try jwtParts(jwt).claims
        XCTAssertEqual(claims, ["iss": .string(Fixture.clientEmail), "sub": .string(Fixture.clientEmail), "scope": .string(scope),
                                "iat": .integer(now), "exp": .integer(now + 3600)])
        _ = try verified(jwt)
    }

    func testEveryJWTLivesExactlyAnHour() throws {
        let key = try Fixture.key()
        for jwt in [try ServiceAccountJWT.assertion(key, scope: scope, subject: "u@example.com", audience: "https://t/", issuedAt: now + 7),
                    try ServiceAccountJWT.accessToken(key, audience: "https://pubsub.googleapis.com/", issuedAt: now + 7),
                    try ServiceAccountJWT.accessToken(key, scope: scope, issuedAt: now + 7)] {
            let claims = try jwtParts(jwt).claims
            XCTAssertEqual(claims["iat"], .integer(now + 7))
            XCTAssertEqual(try XCTUnwrap(claims["exp"]?.integer) - XCTUnwrap(claims["iat"]?.integer), 3600)
        }
        XCTAssertEqual(ServiceAccountJWT.lifetime, 3600)
    }

    func testAKeyWithoutPrivateKeyIdSignsWithoutKid() throws {
        let jwt = try ServiceAccountJWT.accessToken(try Fixture.key(["private_key_id": nil]), audience: "https://a/", issuedAt: now)
        XCTAssertEqual(try jwtParts(jwt).header, ["alg": .string("RS256"), "typ": .string("JWT")])
    }

    // MARK: The self-signed token's answer

    func testTheSelfSignedTokenIsABearerTokenLivingUntilItsExp() throws {
        let grant = ServiceAccountGrant(key: try Fixture.key(), token: .selfSignedAudience("https://pubsub.googleapis.com/"))
        let response = try grant.selfSignedToken(issuedAt: now - 1, unixTime: Double(now) + 0.25)
        XCTAssertEqual(response.tokenType, "Bearer")
        XCTAssertEqual(response.expirySource, .jwtExp)
        XCTAssertEqual(response.expiresIn, 3600 - 1.25)
        XCTAssertNil(response.refreshToken)
        let claims = try jwtParts(response.accessToken.value).claims
        XCTAssertEqual(claims["aud"], .string("https://pubsub.googleapis.com/"))
        XCTAssertEqual(claims["iat"], .integer(now - 1))
        let scoped = ServiceAccountGrant(key: try Fixture.key(), token: .selfSignedScope(scope))
        XCTAssertEqual(try jwtParts(try scoped.selfSignedToken(issuedAt: now, unixTime: Double(now)).accessToken.value).claims["scope"],
                       .string(scope))
    }

    func testAGrantForTheTokenEndpointMakesNoSelfSignedToken() throws {
        let grant = ServiceAccountGrant(key: try Fixture.key(), token: .tokenEndpoint(scope: scope, subject: nil))
        XCTAssertThrowsError(try grant.selfSignedToken(issuedAt: now, unixTime: Double(now))) { error in
            XCTAssertEqual(error as? TokenEndpointError,
                           .serviceAccountJWTFailed(reason: "this service account gets its tokens from its token endpoint"))
        }
        XCTAssertFalse(grant.isSelfSigned)
        XCTAssertFalse(Grant.serviceAccount(grant).isSelfSigned)
        XCTAssertTrue(Grant.serviceAccount(ServiceAccountGrant(key: try Fixture.key(), token: .selfSignedScope(scope))).isSelfSigned)
    }

    // MARK: The token request

    private func identity(_ token: ServiceAccountGrant.Token, configure: (inout Identity) -> Void = { _ in }) throws -> Identity {
        let key = try Fixture.key()
        var identity = Identity(name: "gsa", tokenUrl: key.tokenURI, grant: .serviceAccount(ServiceAccountGrant(key: key, token: token)))
        identity.scope = scope
        configure(&identity)
        return identity
    }

    func testTheTokenRequestIsGooglesJWTBearerGrantWithAFreshAssertion() throws {
        let identity = try identity(.tokenEndpoint(scope: scope, subject: nil))
        let unsigned = try XCTUnwrap(TokenRequest.grant(for: identity))
        XCTAssertEqual(unsigned.purpose, .grant(.jwtBearer))
        XCTAssertTrue(unsigned.needsGrantAssertion)
        XCTAssertEqual(unsigned.fieldNames, ["grant_type"])
        let request = try unsigned.withGrantAssertion(unixTime: now)
        XCTAssertFalse(request.needsGrantAssertion)
        XCTAssertEqual(request.url.description, "https://oauth2.googleapis.com/token")
        XCTAssertEqual(request.fieldNames, ["grant_type", "assertion"])
        let fields = FormURLEncoding.decode(request.bodyText)
        XCTAssertEqual(fields.first?.value, "urn:ietf:params:oauth:grant-type:jwt-bearer")
        XCTAssertEqual(request.headers.map(\.name), ["Content-Type", "Accept"])
        XCTAssertEqual(request.header("Content-Type"), "application/x-www-form-urlencoded")
        let claims = try verified(try XCTUnwrap(fields.last?.value))
        XCTAssertEqual(claims.audience, ["https://oauth2.googleapis.com/token"])
        XCTAssertEqual(claims["scope"], .string(scope))
        XCTAssertNil(claims.subject)
        XCTAssertEqual(claims.issuedAt, now)
        // The client assertion step has nothing to add, and the assertion never shows.
        var random = SystemRandomNumberGenerator()
        XCTAssertEqual(try request.withClientAssertion(unixTime: now, random: &random).bodyText, request.bodyText)
        for text in everyRendering(of: request) { XCTAssertFalse(text.contains(fields.last!.value), text) }
    }

    func testEachRequestGetsItsOwnAssertion() throws {
        let unsigned = try XCTUnwrap(TokenRequest.grant(for: try identity(.tokenEndpoint(scope: scope, subject: nil))))
        let first = try unsigned.withGrantAssertion(unixTime: now).bodyText
        let second = try unsigned.withGrantAssertion(unixTime: now + 60).bodyText
        XCTAssertNotEqual(first, second)
    }

    func testTheAssertionNamesTheTokenURLTheRequestGoesToAndTheDelegatedUser() throws {
        let override = HTTPURL(scheme: .https, host: "oauth2-private.example.com", path: "/token")
        let identity = try identity(.tokenEndpoint(scope: scope, subject: "admin@example.com")) { $0.tokenUrl = override }
        let request = try XCTUnwrap(TokenRequest.grant(for: identity)).withGrantAssertion(unixTime: now)
        XCTAssertEqual(request.url, override)
        let claims = try verified(try XCTUnwrap(FormURLEncoding.decode(request.bodyText).last?.value))
        XCTAssertEqual(claims.audience, ["https://oauth2-private.example.com/token"])
        XCTAssertEqual(claims.subject, "admin@example.com")
    }

    func testNoScopeAudienceOrResourceFieldGoesBesideTheAssertionButParamsAndHeadersDo() throws {
        let identity = try identity(.tokenEndpoint(scope: scope, subject: nil)) {
            $0.audience = "ignored"
            $0.resource = ["https://ignored.example.com/"]
            $0.params = ["extra": "x"]
            $0.headers = ["X-Goog-User-Project": "orders-project"]
        }
        let request = try XCTUnwrap(TokenRequest.grant(for: identity)).withGrantAssertion(unixTime: now)
        XCTAssertEqual(request.fieldNames, ["grant_type", "extra", "assertion"])
        XCTAssertEqual(request.header("X-Goog-User-Project"), "orders-project")
    }

    func testASelfSignedAccountsRequestCarriesNoAssertionToMake() throws {
        let request = try XCTUnwrap(TokenRequest.grant(for: try identity(.selfSignedAudience("https://pubsub.googleapis.com/"))))
        XCTAssertFalse(request.needsGrantAssertion)
        XCTAssertEqual(try request.withGrantAssertion(unixTime: now).fieldNames, ["grant_type"])
    }
}
