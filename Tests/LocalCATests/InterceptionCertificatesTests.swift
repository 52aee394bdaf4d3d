import ByteBuffers
import Crypto
@testable import LocalCA
import TLS
import Dispatch
import Synchronization
import XCTest

/// The leaves the forward proxy completes intercepted connections with: only for the routes'
/// hosts, one per host, renewed before they run out, and a bounded number kept.
final class InterceptionCertificatesTests: CADirectoryTestCase {
    private func certificates(capacity: Int = InterceptionCertificates.defaultCapacity,
                              clock: TestClock = TestClock(testNow)) throws -> InterceptionCertificates {
        InterceptionCertificates(authority: try authority().0, capacity: capacity, clock: clock.read)
    }

    func testHostsNoRouteNamesGetNoConfiguration() throws {
        let leaves = try certificates()
        for host in ["other.test", "example.com", "evil-example.com", "a.api.test", "127.0.0.1", "a,b.example.com", ""] {
            XCTAssertNil(leaves.serverConfiguration(forHost: host), host)
        }
        XCTAssertEqual(leaves.cachedHostCount, 0)
    }

    func testAPermittedHostGetsOneConfigurationReusedAndCaseOrATrailingDotChangeNothing() throws {
        let leaves = try certificates()
        let first = try XCTUnwrap(leaves.serverConfiguration(forHost: "api.test"))
        XCTAssertTrue(leaves.serverConfiguration(forHost: "api.test") === first)
        XCTAssertTrue(leaves.serverConfiguration(forHost: "API.Test.") === first)
        XCTAssertNotNil(leaves.serverConfiguration(forHost: "a.example.com"))
        XCTAssertEqual(leaves.cachedHostCount, 2)
    }

    func testALeafIsRenewedOnceLessThanAnHourIsLeft() throws {
        let clock = TestClock(testNow)
        let leaves = try certificates(clock: clock)
        let first = try XCTUnwrap(leaves.serverConfiguration(forHost: "api.test"))
        // The leaf ends a day after its notBefore, five minutes before `testNow`.
        let renewal = testNow - 300 + 86_400 - 3_600
        clock.set(renewal - 60)
        XCTAssertTrue(leaves.serverConfiguration(forHost: "api.test") === first)
        clock.set(renewal + 60)
        let renewed = try XCTUnwrap(leaves.serverConfiguration(forHost: "api.test"))
        XCTAssertFalse(renewed === first)
        XCTAssertTrue(leaves.serverConfiguration(forHost: "api.test") === renewed)
    }

    /// A clock stepped back past a cached leaf's notBefore: clients would refuse that leaf as not
    /// yet valid, so a new one is minted (valid from the clock's new time).
    func testALeafNotYetValidAfterTheClockSteppedBackIsMintedAgain() throws {
        let clock = TestClock(testNow)
        let leaves = try certificates(clock: clock)
        let first = try XCTUnwrap(leaves.serverConfiguration(forHost: "api.test"))
        clock.set(testNow - 300)
        XCTAssertTrue(leaves.serverConfiguration(forHost: "api.test") === first, "still valid at its notBefore")
        clock.set(testNow - 3_600)
        let again = try XCTUnwrap(leaves.serverConfiguration(forHost: "api.test"))
        XCTAssertFalse(again === first)
        XCTAssertTrue(leaves.serverConfiguration(forHost: "api.test") === again)
    }

    /// A leaf that cannot be minted (here: the CA has expired, so no validity fits in it) is
    /// reported with the host and OpenSSL's reason, and the host gets no configuration.
    func testALeafThatCannotBeMintedIsReported() throws {
        let failures = Mutex<[String]>([])
        let (authority, _) = try authority()
        let leaves = InterceptionCertificates(authority: authority, clock: { authority.certificate.notAfter + 600 },
                                              mintingFailed: { host, reason in failures.withLock { $0.append("\(host): \(reason)") } })
        XCTAssertNil(leaves.serverConfiguration(forHost: "api.test"))
        let reported = failures.withLock { $0 }
        XCTAssertEqual(reported.count, 1)
        XCTAssertTrue(reported.first?.hasPrefix("api.test: ") == true, "\(reported)")
        XCTAssertFalse(reported.joined().contains("PRIVATE KEY"))
        XCTAssertEqual(leaves.cachedHostCount, 0)
    }

    /// Many connections to a new host at once, each minting outside the lock: all get the same
    /// leaf (the first inserted), and one is kept.
    func testConcurrentRequestsForANewHostAllGetOneLeaf() throws {
        let leaves = try certificates()
        for round in 0..<20 {
            let host = "h\(round).example.com"
            let results = Mutex<[ObjectIdentifier]>([])
            DispatchQueue.concurrentPerform(iterations: 8) { _ in
                let configuration = leaves.serverConfiguration(forHost: host)!
                results.withLock { $0.append(ObjectIdentifier(configuration)) }
            }
            XCTAssertEqual(Set(results.withLock { $0 }).count, 1, host)
            XCTAssertTrue(leaves.serverConfiguration(forHost: host).map(ObjectIdentifier.init) == results.withLock { $0 }.first)
        }
        XCTAssertEqual(leaves.cachedHostCount, 20)
    }

    func testPastTheCapacityTheLeastRecentlyUsedHostIsDropped() throws {
        let leaves = try certificates(capacity: 2)
        let a = try XCTUnwrap(leaves.serverConfiguration(forHost: "a.example.com"))
        let b = try XCTUnwrap(leaves.serverConfiguration(forHost: "b.example.com"))
        XCTAssertTrue(leaves.serverConfiguration(forHost: "a.example.com") === a)
        _ = leaves.serverConfiguration(forHost: "c.example.com")
        XCTAssertEqual(leaves.cachedHostCount, 2)
        XCTAssertTrue(leaves.serverConfiguration(forHost: "a.example.com") === a)
        XCTAssertFalse(leaves.serverConfiguration(forHost: "b.example.com") === b)
    }

    /// Past the capacity, 1,024 hosts are kept, the first minted (the least recently used) dropped.
    /// The time per leaf is printed for the record, not asserted: a bound fails under sanitizers.
    func testTheDefaultCapacityHolds1024Hosts() throws {
        let leaves = try certificates()
        let clock = ContinuousClock()
        let first = try XCTUnwrap(leaves.serverConfiguration(forHost: "h0.example.com"))
        let elapsed = clock.measure {
            for index in 1...1_024 { _ = leaves.serverConfiguration(forHost: "h\(index).example.com") }
        }
        XCTAssertEqual(leaves.cachedHostCount, 1_024)
        XCTAssertFalse(leaves.serverConfiguration(forHost: "h0.example.com") === first)
        print("minting one leaf (P-256 key, ECDSA signature, SSL_CTX): \(elapsed / 1_024)")
    }

    /// A client that trusts only `ca.pem` completes TLS with the leaf for the host it named.
    func testAClientTrustingTheCACompletesAHandshakeWithTheLeaf() throws {
        let leaves = try certificates(clock: TestClock(Int64(Date().timeIntervalSince1970)))
        let server = try XCTUnwrap(leaves.serverConfiguration(forHost: "a.example.com"))
        let client = try TLSConfiguration.client(caFile: leaves.authority.certificatePath, trustSystemRoots: false)
        let (clientEngine, serverEngine) = (TLSEngine(client: client, host: "a.example.com"), TLSEngine(server: server))
        handshake(clientEngine, serverEngine)
        XCTAssertEqual(clientEngine.state, .established)
        XCTAssertEqual(serverEngine.state, .established)
        XCTAssertEqual(clientEngine.negotiatedProtocol, "http/1.1")

        let wrongName = TLSEngine(client: client, host: "b.example.com")
        handshake(wrongName, TLSEngine(server: server))
        XCTAssertEqual(wrongName.state, .failed(.nameMismatch(expected: "b.example.com")))
    }

    private func handshake(_ client: TLSEngine, _ server: TLSEngine) {
        var plaintext = ByteBuffer()
        var moved = true
        while moved {
            moved = false
            for (from, to) in [(client, server), (server, client)] {
                var bytes = ByteBuffer()
                guard from.takeOutgoing(into: &bytes) > 0 else { continue }
                to.feed(Array(bytes.readableBytes))
                _ = to.read(into: &plaintext)
                moved = true
            }
        }
    }
}
