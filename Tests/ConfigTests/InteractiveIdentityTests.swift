import Config
import Endpoints
import OAuth2
import XCTest

/// The keys of identities a person logs in to, and the rules that tie them to the listeners.
final class InteractiveIdentityTests: XCTestCase {
    private func config(listen: String = "127.0.0.1:8180", identity: String, routeIdentity: Bool = true) -> String {
        #"{ "listen": "\#(listen)", "identities": { "me": { \#(identity) } }, "routes": [ { "upstream": "http://127.0.0.1:9001""#
            + (routeIdentity ? #", "identity": "me""# : "") + " } ] }"
    }

    private let browser = #""grant": "authorization_code", "clientId": "cli", "tokenUrl": "https://idp/token", "authorizationUrl": "https://idp/authorize""#

    func testTheRedirectURIDefaultsToTheCallbackOnTheListener() throws {
        let identity = try XCTUnwrap(decodeConfig(config(identity: browser)).identities["me"])
        XCTAssertEqual(identity.redirectUri?.description, "http://127.0.0.1:8180/.oauth-relay/callback")
    }

    func testARedirectURIOnNoListenerIsRefused() {
        let errors = describe(configErrors(config(identity: browser + #", "redirectUri": "http://127.0.0.1:9999/cb""#)))
        XCTAssertEqual(errors.count, 1)
        XCTAssertTrue(errors[0].hasPrefix("$.identities.me.redirectUri: http://127.0.0.1:9999/cb is served by no listener"), errors[0])
    }

    func testALocalhostRedirectURIIsOnALoopbackListener() throws {
        let identity = try XCTUnwrap(decodeConfig(config(identity: browser + #", "redirectUri": "http://localhost:8180/login/done""#))
            .identities["me"])
        XCTAssertEqual(identity.redirectUri?.path, "/login/done")
    }

    func testAPersonsTokenOnANetworkListenerNeedsAllowRemoteUse() throws {
        let errors = describe(configErrors(config(listen: "0.0.0.0:8180", identity: browser)))
        XCTAssertEqual(errors.count, 1)
        XCTAssertTrue(errors[0].contains("acts for a person") && errors[0].contains("allowRemoteUse"), errors[0])
        XCTAssertNoThrow(try decodeConfig(config(listen: "0.0.0.0:8180", identity: browser + #", "allowRemoteUse": true"#)))
        XCTAssertNoThrow(try decodeConfig(config(listen: "0.0.0.0:8180", identity: browser, routeIdentity: false)),
                         "an identity on no route offers no token")
    }

    func testLoginEndpointsAreRequiredWithoutAnIssuer() {
        let errors = describe(configErrors(config(identity: #""grant": "device_code", "clientId": "tv", "tokenUrl": "https://idp/token""#)))
        XCTAssertEqual(errors, [#"$.identities.me.deviceAuthorizationUrl: required for the device_code grant (or "issuer", to discover it)"#])
    }

    func testAnIssuerMakesTheEndpointsOptional() throws {
        let identity = try XCTUnwrap(decodeConfig(config(identity: #""grant": "authorization_code", "clientId": "cli", "issuer": "https://idp.example", "scope": "openid""#))
            .identities["me"])
        XCTAssertNil(identity.tokenUrl)
        XCTAssertTrue(identity.needsDiscovery)
        XCTAssertNil(identity.configuredEndpoints)
    }

    func testAnOpenIDScopeNeedsTheIssuerToCheckTheIDToken() {
        let errors = describe(configErrors(config(identity: browser + #", "scope": "openid email", "jwksUrl": "https://idp/jwks""#)))
        XCTAssertEqual(errors, [#"$.identities.me.issuer: required when the scope asks for openid: the ID token's iss is checked against it"#])
    }

    func testLoginKeysOfOtherGrantsAreRefused() {
        let errors = describe(configErrors(config(identity: #""clientId": "svc", "clientSecret": "s", "tokenUrl": "https://idp/token", "redirectUri": "http://127.0.0.1:8180/cb""#)))
        XCTAssertEqual(errors, [#"$.identities.me.redirectUri: redirectUri is only used by the authorization_code grant, not by the client_credentials grant"#])
    }
}
