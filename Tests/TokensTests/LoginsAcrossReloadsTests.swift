import Endpoints
import HTTPClient
import Logging
import OAuth2
@testable import Tokens
import XCTest

/// A reload and the browser logins in flight: a login for an identity the reload removes, or
/// whose grant, client, IdP, callback or scope it changes, is cancelled (its callback is refused
/// as unknown); a login whose identity keeps all that completes.
final class LoginsAcrossReloadsTests: XCTestCase {
    private func browserIdentity(authorizationPath: String = "/authorize", refreshSkewSeconds: Double = 10) -> Identity {
        var identity = Identity(name: "me", tokenUrl: HTTPURL(scheme: .http, host: "127.0.0.1", port: 9, path: "/token"),
                                grant: .authorizationCode(seed: nil), clientAuth: .publicClient(id: "cli"))
        identity.authorizationUrl = HTTPURL(scheme: .http, host: "127.0.0.1", port: 9, path: authorizationPath)
        identity.redirectUri = HTTPURL(scheme: .http, host: "127.0.0.1", port: 8180, path: "/.oauth-relay/callback")
        identity.refreshSkewSeconds = refreshSkewSeconds
        return identity
    }

    private func start(_ identity: Identity) throws -> TokenService {
        try TokenService.start(identities: ["me": identity], limits: HTTPClientLimits(), logger: Logger(label: "test"))
    }

    private struct StartedLogin {
        let query: String
        let cookie: (name: String, value: String)
    }

    /// Starts a login of `me`; what its browser brings back to the callback with a code.
    private func startLogin(_ service: TokenService) throws -> StartedLogin {
        let login = try service.logins.startBrowserLogin(try XCTUnwrap(service.tokenSet["me"]), returnTo: nil, browserOrigin: nil, at: monotonicSeconds())
        let query = try XCTUnwrap(login.location.split(separator: "?", maxSplits: 1).last)
        let state = try XCTUnwrap(query.split(separator: "&").first { $0.hasPrefix("state=") }).dropFirst("state=".count)
        let cookie = try XCTUnwrap(login.cookie.setCookie(secure: false).split(separator: ";").first)
        let parts = cookie.split(separator: "=", maxSplits: 1).map(String.init)
        return StartedLogin(query: "code=code-1&state=\(state)", cookie: (parts[0], parts[1]))
    }

    private func callback(_ service: TokenService, _ login: StartedLogin) -> LoginDesk.CallbackResult {
        service.logins.callback(path: "/.oauth-relay/callback", query: login.query, cookies: [login.cookie], origin: nil,
                                identities: service.tokenSet, at: monotonicSeconds())
    }

    private func assertCancelled(_ result: LoginDesk.CallbackResult, file: StaticString = #filePath, line: UInt = #line) {
        guard case .refused(let reason, _) = result else { return XCTFail("the callback was accepted: \(result)", file: file, line: line) }
        XCTAssertEqual(reason, LoginRefusal.unknownState.description, file: file, line: line)
    }

    func testAReloadThatMovesTheAuthorizationEndpointCancelsTheLoginsInFlight() throws {
        let service = try start(browserIdentity())
        defer { service.stop() }
        let login = try startLogin(service)
        service.replace(identities: ["me": browserIdentity(authorizationPath: "/v2/authorize")], tls: [:], limits: HTTPClientLimits())
        assertCancelled(callback(service, login))
    }

    func testAReloadThatRemovesTheIdentityCancelsItsLogins() throws {
        let service = try start(browserIdentity())
        defer { service.stop() }
        let login = try startLogin(service)
        service.replace(identities: [:], tls: [:], limits: HTTPClientLimits())
        assertCancelled(callback(service, login))
    }

    func testAReloadThatKeepsWhatALoginNeedsLetsItComplete() throws {
        let service = try start(browserIdentity())
        defer { service.stop() }
        let login = try startLogin(service)
        let change = service.replace(identities: ["me": browserIdentity(refreshSkewSeconds: 30)], tls: [:], limits: HTTPClientLimits())
        XCTAssertEqual(change.started, ["me"], "the identity did change")
        guard case .exchanging(let identity, _, _) = callback(service, login) else { return XCTFail("the login was cancelled") }
        XCTAssertEqual(identity, "me")
    }

    func testAnExpiredLoginWithoutAStepUpLeavesTheStepUpAskedSinceAlone() throws {
        let service = try start(browserIdentity())
        defer { service.stop() }
        let tokens = try XCTUnwrap(service.tokenSet["me"])
        let startedAt = monotonicSeconds()
        let login = try service.logins.startBrowserLogin(tokens, returnTo: nil, browserOrigin: nil, at: startedAt)
        let query = try XCTUnwrap(login.location.split(separator: "?", maxSplits: 1).last)
        let state = try XCTUnwrap(query.split(separator: "&").first { $0.hasPrefix("state=") }).dropFirst("state=".count)
        let cookie = try XCTUnwrap(login.cookie.setCookie(secure: false).split(separator: ";").first).split(separator: "=", maxSplits: 1)
        // A step-up asked after that login started, which that login does not carry.
        let stepUp = StepUp(scope: ["orders.write"])
        tokens.publish { lifecycle in
            _ = lifecycle.stepUp(stepUp, at: startedAt + 650)
            return true
        }
        let result = service.logins.callback(path: "/.oauth-relay/callback", query: "code=code-1&state=\(state)",
                                             cookies: [(String(cookie[0]), String(cookie[1]))], origin: nil,
                                             identities: service.tokenSet, at: startedAt + PendingLogins.defaultTimeoutSeconds + 100)
        guard case .refused(let reason, _) = result else { return XCTFail("the expired login was accepted: \(result)") }
        XCTAssertTrue(reason.contains("was not completed within"), reason)
        XCTAssertEqual(tokens.update { $0.pendingStepUp(at: startedAt + 700) }, stepUp, "the step-up no login carried is still asked for")
    }
}
