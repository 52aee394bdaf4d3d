import Endpoints
import Foundation
import OAuth2
import SafeText
import XCTest

/// `TokenRequest.rebuilt(for:)`: every kind of request made again with the credentials a file
/// holds now, and `client_assertion_file`'s form.
final class TokenRequestRebuiltTests: XCTestCase {
    private let tokenEndpoint = HTTPURL(scheme: .https, host: "login.example.com", path: "/oauth2/token")
    private let deviceEndpoint = HTTPURL(scheme: .https, host: "login.example.com", path: "/oauth2/device")
    private let revocationEndpoint = HTTPURL(scheme: .https, host: "login.example.com", path: "/oauth2/revoke")

    /// `identity`, and the same with the client secret `new-secret`.
    private func rotated(_ identity: Identity) throws -> (loaded: Identity, rotated: Identity) {
        (identity, try identity.withCredential(.clientSecret, content: "new-secret"))
    }

    private func assertSameRequest(_ rebuilt: TokenRequest, _ expected: TokenRequest, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(rebuilt.purpose, expected.purpose, file: file, line: line)
        XCTAssertEqual(rebuilt.url, expected.url, file: file, line: line)
        XCTAssertEqual(rebuilt.bodyText, expected.bodyText, file: file, line: line)
        XCTAssertEqual(rebuilt.headers, expected.headers, file: file, line: line)
    }

    func testAGrantIsMadeAgainWithTheNewGrantCredential() throws {
        let loaded = makeIdentity(.password(username: "svc", password: Secret("old-password"))) { $0.scope = "orders.read" }
        let rotated = try loaded.withCredential(.password, content: "new-password")
        let request = try XCTUnwrap(TokenRequest.grant(for: loaded, at: tokenEndpoint))
        let rebuilt = request.rebuilt(for: rotated)
        assertSameRequest(rebuilt, try XCTUnwrap(TokenRequest.grant(for: rotated, at: tokenEndpoint)))
        XCTAssertEqual(rebuilt.bodyText, "grant_type=password&username=svc&password=new-password&scope=orders.read")
    }

    func testAClientCredentialsGrantTakesTheNewSecret() throws {
        let (loaded, rotated) = try rotated(makeIdentity(auth: .post) { $0.params = ["tenant": "acme"] })
        let rebuilt = try XCTUnwrap(TokenRequest.grant(for: loaded, at: tokenEndpoint)).rebuilt(for: rotated)
        XCTAssertEqual(rebuilt.bodyText, "grant_type=client_credentials&client_id=orders-relay&client_secret=new-secret&tenant=acme")
    }

    func testARefreshKeepsItsRefreshTokenAndTakesTheNewBasicCredentials() throws {
        let (loaded, rotated) = try rotated(makeIdentity())
        let request = TokenRequest.refresh(for: loaded, refreshToken: Secret("rt-issued"), at: tokenEndpoint)
        let rebuilt = request.rebuilt(for: rotated)
        assertSameRequest(rebuilt, TokenRequest.refresh(for: rotated, refreshToken: Secret("rt-issued"), at: tokenEndpoint))
        XCTAssertEqual(rebuilt.bodyText, "grant_type=refresh_token&refresh_token=rt-issued")
        XCTAssertEqual(rebuilt.header("Authorization"), TokenRequest.basicCredentialsForTests(id: "orders-relay", secret: "new-secret"))
    }

    func testACodeExchangeKeepsItsCodeVerifierAndRedirect() throws {
        let (loaded, rotated) = try rotated(makeIdentity(.authorizationCode(seed: nil), auth: .post))
        func exchange(_ identity: Identity) -> TokenRequest {
            TokenRequest.authorizationCode(for: identity, code: Secret("code-1"), verifier: Secret("verifier-1"),
                                           redirectUri: "http://127.0.0.1:8180/cb", at: tokenEndpoint)
        }
        assertSameRequest(exchange(loaded).rebuilt(for: rotated), exchange(rotated))
        XCTAssertTrue(exchange(loaded).rebuilt(for: rotated).bodyText.hasSuffix("&client_secret=new-secret"))
    }

    func testADevicePollKeepsItsDeviceCode() throws {
        let (loaded, rotated) = try rotated(makeIdentity(.deviceCode(seed: nil), auth: .post))
        func poll(_ identity: Identity) -> TokenRequest {
            TokenRequest.deviceCodePoll(for: identity, deviceCode: Secret("device-code-1"), at: tokenEndpoint)
        }
        assertSameRequest(poll(loaded).rebuilt(for: rotated), poll(rotated))
    }

    func testADeviceAuthorizationKeepsItsEndpointAndTheTokenEndpointItsAssertionNames() throws {
        let loaded = makeIdentity(.deviceCode(seed: nil)) {
            $0.scope = "openid"
            $0.clientAuth = .clientAssertion(id: "tv", assertion: Secret(makeJWT(#"{"exp":1}"#)))
        }
        let next = makeJWT(#"{"exp":2}"#)
        let rotated = try loaded.withCredential(.clientAssertion, content: next)
        let request = TokenRequest.deviceAuthorization(for: loaded, at: deviceEndpoint, tokenEndpoint: tokenEndpoint)
        let rebuilt = request.rebuilt(for: rotated)
        assertSameRequest(rebuilt, TokenRequest.deviceAuthorization(for: rotated, at: deviceEndpoint, tokenEndpoint: tokenEndpoint))
        XCTAssertEqual(rebuilt.url, deviceEndpoint)
        XCTAssertTrue(rebuilt.bodyText.hasSuffix("&client_assertion=" + next), rebuilt.bodyText)
    }

    func testAPrivateKeyJWTRevocationStillNamesTheTokenEndpoint() throws {
        let loaded = makeIdentity(.authorizationCode(seed: nil)) {
            $0.clientAuth = .clientSecretJWT(id: "web", secret: Secret("0123456789abcdef0123456789abcdef"))
        }
        let rotated = try loaded.withCredential(.clientSecret, content: "fedcba9876543210fedcba9876543210")
        func revocation(_ identity: Identity) -> TokenRequest {
            TokenRequest.revocation(for: identity, token: Secret("rt-1"), at: revocationEndpoint, tokenEndpoint: tokenEndpoint)
        }
        var random = SeededRandom()
        let rebuilt = try revocation(loaded).rebuilt(for: rotated).withClientAssertion(unixTime: 1_700_000_000, random: &random)
        random = SeededRandom()
        let expected = try revocation(rotated).withClientAssertion(unixTime: 1_700_000_000, random: &random)
        assertSameRequest(rebuilt, expected)
        XCTAssertEqual(rebuilt.url, revocationEndpoint)
    }

    func testAClientAssertionFileIsSentAsItIsWithTheClientIdWhenThereIsOne() throws {
        let assertion = makeJWT(#"{"iss":"https://kubernetes.default.svc","sub":"system:serviceaccount:ns:app","exp":1}"#)
        let withId = makeIdentity { $0.clientAuth = .clientAssertion(id: "app", assertion: Secret(assertion)) }
        let request = try XCTUnwrap(TokenRequest.grant(for: withId, at: tokenEndpoint))
        XCTAssertEqual(request.bodyText, "grant_type=client_credentials&client_id=app"
                       + "&client_assertion_type=urn%3Aietf%3Aparams%3Aoauth%3Aclient-assertion-type%3Ajwt-bearer"
                       + "&client_assertion=" + assertion)
        XCTAssertFalse(request.needsClientAssertion, "nothing to sign")
        XCTAssertNil(request.header("Authorization"))
        let withoutId = makeIdentity(.jwtBearer(assertion: Secret("grant-assertion"))) {
            $0.clientAuth = .clientAssertion(id: nil, assertion: Secret(assertion))
        }
        XCTAssertEqual(try XCTUnwrap(TokenRequest.grant(for: withoutId, at: tokenEndpoint)).fieldNames,
                       ["grant_type", "assertion", "client_assertion_type", "client_assertion"])
        XCTAssertEqual(ClientAuth.clientAssertion(id: nil, assertion: Secret(assertion)).name, "client_assertion_file")
        let error = reply(400, "<p>bad assertion \(assertion)</p>", contentType: "text/html")
        XCTAssertThrowsError(try request.parseResponse(error, unixTime: 0)) { XCTAssertFalse("\($0)".contains(assertion)) }
    }
}

extension TokenRequest {
    /// The `Authorization` value of client_secret_basic, for expectations.
    static func basicCredentialsForTests(id: String, secret: String) -> String {
        "Basic " + Data("\(id):\(secret)".utf8).base64EncodedString()
    }
}
