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

/// The shared store stopping (SharedTokens.stop) on a real Redis: a lease whose grant is on its way
/// back when the loop stops is given back, not left to expire while every other replica waits for
/// it, and the loop still ends.
final class SharedTokensStopTests: XCTestCase {
    /// The token loop's side, for the one fetch of the test: the entry never satisfies it.
    private final class Driver: SharedTokensDriver {
        let request: TokenRequest
        var reads = 0
        var sent = 0

        init(request: TokenRequest) {
            self.request = request
        }

        func fetchLocally(_ request: TokenRequest, for tokens: IdentityTokens) { XCTFail("the fetch went without Redis") }
        func send(_ request: TokenRequest, for tokens: IdentityTokens) { sent += 1 }
        func fetchSatisfied(_ tokens: IdentityTokens) { XCTFail("nothing stored could satisfy the fetch") }
        func sharedLoginRemoved(_ tokens: IdentityTokens) { XCTFail("no replica logged anyone out") }

        func sharedEntryRead(_ token: AccessToken?, refreshToken: Secret?, for tokens: IdentityTokens) -> TokenLifecycle.StoredEntryOutcome {
            reads += 1
            return .fetch(request)
        }
    }

    private let identity = Identity(name: "orders", tokenUrl: HTTPURL(scheme: .http, host: "127.0.0.1", port: 9, path: "/token"),
                                    grant: .clientCredentials, clientAuth: .publicClient(id: "orders-relay"))

    /// What redis-cli answers to `arguments` (the test's own view of the server, outside the loop).
    private func cli(_ server: RedisServer, _ arguments: [String]) throws -> String {
        let process = Process()
        let output = Pipe()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/redis-cli")
        process.arguments = ["-h", "127.0.0.1", "-p", String(server.port)] + arguments
        process.standardOutput = output
        try process.run()
        process.waitUntilExit()
        return String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func testALeaseGrantedWhileStoppingIsReleased() throws {
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
        let lease = String(decoding: SharedEntryKeys(prefix: "test:", identity: "orders", fingerprint: SettingsFingerprint(identity)).lease,
                           as: UTF8.self)

        shared.fetchDue(tokens, request: request, retired: false, leaseMilliseconds: 60_000)
        test.run(until: "the entry was read") { driver.reads == 1 }
        // The acquire went out in the turn that handled the read. Turn the loop (without waiting)
        // until Redis has granted the lease: its answer is then on its way, not yet handled.
        var turns = 0
        while try cli(server, ["EXISTS", lease]) != "1" && turns < 100 {
            test.loop.runOnce(wait: false)
            turns += 1
        }
        XCTAssertEqual(try cli(server, ["EXISTS", lease]), "1", "Redis never granted the lease")
        XCTAssertEqual(driver.sent, 0, "the grant was handled before the stop")

        shared.stop()
        test.closeAndCheckForLeaks()
        XCTAssertEqual(try cli(server, ["EXISTS", lease]), "0", "the lease granted while stopping was left to expire")
        XCTAssertEqual(driver.sent, 0, "no token request starts while stopping")
    }
}
