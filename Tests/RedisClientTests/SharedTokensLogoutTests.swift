import Crypto
import Endpoints
import EventLoop
import Foundation
import Logging
import LoopTestSupport
import OAuth2
import RedisProtocol
import SafeText
import TokenStore
@testable import Tokens
import XCTest

/// Another replica's logout heard on a real Redis (SharedTokens): a client-credentials identity
/// fetching through the shared store is forgotten like a person's login; this replica's own
/// removal and a write's message are not logouts.
final class SharedTokensLogoutTests: XCTestCase {
    /// The token loop's side: the entry never satisfies the fetch; logouts heard are kept.
    private final class Driver: SharedTokensDriver {
        let request: TokenRequest
        var sent = 0
        var removed: [String] = []

        init(request: TokenRequest) {
            self.request = request
        }

        func fetchLocally(_ request: TokenRequest, for tokens: IdentityTokens) { XCTFail("the fetch went without Redis") }
        func send(_ request: TokenRequest, for tokens: IdentityTokens) { sent += 1 }
        func fetchSatisfied(_ tokens: IdentityTokens) {}
        func sharedLoginRemoved(_ tokens: IdentityTokens) { removed.append(tokens.identity.name) }
        func sharedEntryRead(_ token: AccessToken?, refreshToken: Secret?, for tokens: IdentityTokens) -> TokenLifecycle.StoredEntryOutcome {
            .fetch(request)
        }
    }

    private let identity = Identity(name: "orders", tokenUrl: HTTPURL(scheme: .http, host: "127.0.0.1", port: 9, path: "/token"),
                                    grant: .clientCredentials, clientAuth: .publicClient(id: "orders-relay"))

    private func publish(_ server: RedisServer, _ message: [UInt8]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/redis-cli")
        process.arguments = ["-h", "127.0.0.1", "-p", String(server.port), "PUBLISH", "test:written", String(decoding: message, as: UTF8.self)]
        process.standardOutput = Pipe()
        try process.run()
        process.waitUntilExit()
    }

    func testAClientCredentialsIdentityLoggedOutByAnotherReplicaIsForgotten() throws {
        let server = try RedisServer()
        defer { server.stop() }
        let test = try LeakCheckedLoop()
        let tokens = IdentityTokens(identity: identity, slot: 0)
        let request = try XCTUnwrap(tokens.update { $0.startFetchIfDue(at: 0) })
        let driver = Driver(request: request)
        let settings = SharedStoreSettings(endpoint: RedisEndpoint(host: "127.0.0.1", port: server.port), keyPrefix: "test:",
                                           timeoutMilliseconds: 2000, key: SymmetricKey([UInt8](repeating: 7, count: 32)))
        let shared = SharedTokens(settings: settings, loop: test.loop, logger: Logger(label: "test"), observer: nil, driver: driver)
        test.run(until: "the link is up") { shared.link.isReady }
        shared.fetchDue(tokens, request: request, retired: false, leaseMilliseconds: 60_000)
        test.run(until: "the token request was sent") { driver.sent == 1 }
        shared.fetchEnded(tokens, obtained: false, refreshTokenDropped: false, held: tokens.update { HeldTokens($0) })

        let keys = SharedEntryKeys(prefix: "test:", identity: "orders", fingerprint: SettingsFingerprint(identity))
        // This replica's own removal, a write's message, then another replica's removal: only the last is a logout.
        try publish(server, keys.removal(by: shared.holder))
        try publish(server, keys.entry)
        try publish(server, keys.removal(by: "00000000000000ff"))
        test.run(until: "the logout was heard") { !driver.removed.isEmpty }
        XCTAssertEqual(driver.removed, ["orders"])

        shared.stop()
        test.closeAndCheckForLeaks()
    }
}
