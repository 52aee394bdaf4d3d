import EventLoop
import Foundation
import OAuth2
import RedisClient
import RedisProtocol
import LoopTestSupport
import SafeText
import XCTest

/// One connection on the event loop, over TCP or TLS: opening (AUTH, SELECT, SUBSCRIBE), commands,
/// deadlines, and endings — each test ends with the loop closed and nothing left on it.
final class RedisConnectionTests: XCTestCase {
    private var test: LeakCheckedLoop!
    private var loop: EventLoop { test.loop }

    override func setUpWithError() throws {
        test = try LeakCheckedLoop()
    }

    override func tearDown() {
        test.closeAndCheckForLeaks()
    }

    private func endpoint(_ port: UInt16, password: String? = nil, database: Int = 0) -> RedisEndpoint {
        RedisEndpoint(host: "127.0.0.1", port: port, database: database, password: password.map(Secret.init))
    }

    /// Opens a connection and runs the loop until it is ready or ended.
    private func open(_ endpoint: RedisEndpoint, timeout: UInt64 = 1000, channel: [UInt8]? = nil,
                      onMessage: @escaping ([UInt8]) -> Void = { _ in }) -> (RedisConnection, Result<Void, RedisConnection.Failure>?) {
        var outcome: Result<Void, RedisConnection.Failure>?
        let connection = RedisConnection(loop: loop, endpoint: endpoint, timeoutMilliseconds: timeout, subscribingTo: channel,
                                         onMessage: onMessage, onReady: { outcome = .success(()) },
                                         onEnded: { outcome = outcome ?? .failure($0) })
        test.run(until: "the connection is open or failed") { outcome != nil }
        return (connection, outcome)
    }

    private func command(_ connection: RedisConnection, _ arguments: [RedisArgument]) -> Result<RedisReply, RedisConnection.Failure>? {
        var result: Result<RedisReply, RedisConnection.Failure>?
        guard connection.send(RedisCommand(arguments), completion: { result = $0 }) else { return nil }
        test.run(until: "the reply") { result != nil }
        return result
    }

    private func failure<Success>(_ result: Result<Success, RedisConnection.Failure>) -> RedisConnection.Failure? {
        if case .failure(let failure) = result { return failure }
        return nil
    }

    func testCommandsGetTheirRepliesInOrder() throws {
        let server = try RedisServer()
        defer { server.stop() }
        let (connection, opened) = open(endpoint(server.port, database: 3))
        XCTAssertNotNil(try opened?.get())
        var replies: [RedisReply] = []
        connection.send(RedisCommand(["SET", "k", .bytes([0, 1, 2])])) { replies.append((try? $0.get()) ?? .null) }
        connection.send(RedisCommand(["GET", "k"])) { replies.append((try? $0.get()) ?? .null) }
        connection.send(RedisCommand(["HGET", "k", "f"])) { replies.append((try? $0.get()) ?? .null) }
        test.run(until: "three replies") { replies.count == 3 }
        XCTAssertEqual(replies[0], .status("OK"))
        XCTAssertEqual(replies[1], .bulk([0, 1, 2]))
        guard case .error(let text) = replies[2] else { return XCTFail("expected WRONGTYPE, got \(replies[2])") }
        XCTAssertTrue(text.hasPrefix("WRONGTYPE"))
        // SELECT 3 took effect: database 0 has no such key.
        XCTAssertEqual(try command(connection, ["SELECT", "0"])?.get(), .status("OK"))
        XCTAssertEqual(try command(connection, ["EXISTS", "k"])?.get(), .integer(0))
        connection.close()
    }

    func testASubscribedConnectionHearsWhatIsPublished() throws {
        let server = try RedisServer()
        defer { server.stop() }
        var heard: [[UInt8]] = []
        let (listener, opened) = open(endpoint(server.port), channel: Array("relay:written".utf8)) { heard.append($0) }
        XCTAssertNotNil(try opened?.get())
        let (publisher, _) = open(endpoint(server.port))
        XCTAssertEqual(try command(publisher, ["PUBLISH", "relay:written", "relay:orders:ab"])?.get(), .integer(1))
        XCTAssertEqual(try command(publisher, ["PUBLISH", "elsewhere", "x"])?.get(), .integer(0))
        test.run(until: "the message") { !heard.isEmpty }
        XCTAssertEqual(heard, [Array("relay:orders:ab".utf8)])
        listener.close()
        publisher.close()
    }

    func testAuthWithTheRightPasswordAndUser() throws {
        let server = try RedisServer(extraArguments: ["--requirepass", "pw-default", "--user", "relay", "on", ">pw-relay", "~*", "&*", "+@all"])
        defer { server.stop() }
        let (first, defaultUser) = open(endpoint(server.port, password: "pw-default"))
        XCTAssertNotNil(try defaultUser?.get())
        var aclEndpoint = endpoint(server.port, password: "pw-relay")
        aclEndpoint.user = "relay"
        let (second, aclUser) = open(aclEndpoint)
        XCTAssertNotNil(try aclUser?.get())
        XCTAssertEqual(try command(second, ["ACL", "WHOAMI"])?.get(), .bulk(Array("relay".utf8)))
        first.close()
        second.close()
    }

    func testAWrongPasswordEndsTheOpeningWithTheServersWordsOnly() throws {
        let server = try RedisServer(extraArguments: ["--requirepass", "pw-default"])
        defer { server.stop() }
        let (connection, outcome) = open(endpoint(server.port, password: "a-wrong-password"))
        guard case .failure(.refused(let reason)) = outcome else { return XCTFail("expected refused, got \(String(describing: outcome))") }
        XCTAssertTrue(reason.hasPrefix("AUTH: WRONGPASS"), reason)
        XCTAssertFalse(reason.contains("a-wrong-password"))
        XCTAssertFalse(connection.isReady)
        XCTAssertFalse(connection.send(RedisCommand(["PING"])) { _ in })
    }

    func testACommandSlowerThanTheTimeoutEndsTheConnection() throws {
        let server = try RedisServer(extraArguments: ["--enable-debug-command", "yes"])
        defer { server.stop() }
        var ended: RedisConnection.Failure?
        var ready = false
        let connection = RedisConnection(loop: loop, endpoint: endpoint(server.port), timeoutMilliseconds: 100,
                                         onReady: { ready = true }, onEnded: { ended = $0 })
        test.run(until: "ready") { ready }
        var results: [Result<RedisReply, RedisConnection.Failure>] = []
        let started = loop.nowMilliseconds
        // The server answers after a second; the 100 ms timeout must end the wait long before. The
        // margin (to 900 ms) is for a loaded machine, where the loop may run late.
        connection.send(RedisCommand(["DEBUG", "SLEEP", "1"])) { results.append($0) }
        connection.send(RedisCommand(["PING"])) { results.append($0) }
        test.run(until: "both commands ended") { results.count == 2 }
        XCTAssertLessThan(loop.nowMilliseconds - started, 900, "the timeout did not end the wait")
        XCTAssertEqual(results.map(failure), [.timedOut(milliseconds: 100), .closed("closed")])
        XCTAssertEqual(ended, .timedOut(milliseconds: 100))
        XCTAssertFalse(connection.isReady)
    }

    func testAServerThatAcceptsButNeverAnswersFailsTheOpening() throws {
        var held: [TCPStream] = []
        let listener = try TCPListener(loop: loop, address: SocketAddress(ip: "127.0.0.1", port: 0)!, reusePort: false) { held.append($0) }
        let port = try XCTUnwrap(listener.localAddress?.port)
        let started = loop.nowMilliseconds
        let (_, outcome) = open(endpoint(port), timeout: 150)
        XCTAssertEqual(outcome.flatMap(failure), .timedOut(milliseconds: 150))
        XCTAssertGreaterThanOrEqual(loop.nowMilliseconds - started, 140)
        XCTAssertEqual(held.count, 1, "it did connect")
        held.forEach { $0.close() }
        listener.close()
    }

    /// A listener that answers every connection with `bytes` at once, whatever it is sent.
    private func answering(_ bytes: String, held: @escaping (TCPStream) -> Void) throws -> (TCPListener, UInt16) {
        let listener = try TCPListener(loop: loop, address: SocketAddress(ip: "127.0.0.1", port: 0)!, reusePort: false) { stream in
            Array(bytes.utf8).withUnsafeBytes { stream.write($0) }
            held(stream)
        }
        return (listener, try XCTUnwrap(listener.localAddress?.port))
    }

    func testBytesThatAreNotRESPEndTheConnectionWithTheReason() throws {
        var held: [TCPStream] = []
        let (listener, port) = try answering("!not-resp\r\n") { held.append($0) }
        let (connection, outcome) = open(endpoint(port))
        XCTAssertEqual(outcome.flatMap(failure), .closed("not a RESP2 reply: unknown type byte 0x21"))
        XCTAssertFalse(connection.isReady)
        held.forEach { $0.close() }
        listener.close()
    }

    func testAReplyNoCommandWaitsForEndsTheConnection() throws {
        var held: [TCPStream] = []
        // The PONG answers the opening's PING; the second reply answers nothing.
        let (listener, port) = try answering("+PONG\r\n$5\r\nextra\r\n") { held.append($0) }
        var ready = false
        var ended: RedisConnection.Failure?
        let connection = RedisConnection(loop: loop, endpoint: endpoint(port), timeoutMilliseconds: 1000,
                                         onReady: { ready = true }, onEnded: { ended = $0 })
        test.run(until: "the connection ended") { ended != nil }
        XCTAssertTrue(ready)
        XCTAssertEqual(ended, .closed("a reply to no command ($5 bytes)"))
        XCTAssertFalse(connection.isReady)
        held.forEach { $0.close() }
        listener.close()
    }

    func testALongReplyToNoCommandIsShownShortened() throws {
        var held: [TCPStream] = []
        let (listener, port) = try answering("+PONG\r\n*100\r\n" + String(repeating: ":1\r\n", count: 100)) { held.append($0) }
        var ended: RedisConnection.Failure?
        let connection = RedisConnection(loop: loop, endpoint: endpoint(port), timeoutMilliseconds: 1000,
                                         onReady: {}, onEnded: { ended = $0 })
        test.run(until: "the connection ended") { ended != nil }
        guard case .closed(let reason) = ended else { return XCTFail("got \(String(describing: ended))") }
        XCTAssertEqual(reason, "a reply to no command ([" + String(repeating: ":1, ", count: 50).dropLast(1) + "…)")
        XCTAssertFalse(connection.isReady)
        held.forEach { $0.close() }
        listener.close()
    }

    func testATLSEndpointWithoutATLSConfigurationNeverConnects() throws {
        var accepted = 0
        let listener = try TCPListener(loop: loop, address: SocketAddress(ip: "127.0.0.1", port: 0)!, reusePort: false) {
            accepted += 1
            $0.close()
        }
        let port = try XCTUnwrap(listener.localAddress?.port)
        var tlsEndpoint = endpoint(port)
        tlsEndpoint.usesTLS = true
        let (_, outcome) = open(tlsEndpoint)
        XCTAssertEqual(outcome.flatMap(failure), .unreachable("127.0.0.1:\(port): rediss:// without a TLS configuration"))
        XCTAssertEqual(accepted, 0, "it connected in plain TCP")
        listener.close()
    }

    /// The kernel's view of the connection (/proc/net/tcp): an idle connection to Redis runs the
    /// keepalive timer (timer 2), due within its 30 s idle time, not libuv's default 60 s.
    func testAnIdleConnectionProbesItsServerWithinThirtySeconds() throws {
        let server = try RedisServer()
        defer { server.stop() }
        let (connection, opened) = open(endpoint(server.port))
        XCTAssertNotNil(try opened?.get())
        let ticksPerSecond = Int(sysconf(Int32(_SC_CLK_TCK)))
        var timer: (kind: Int, dueTicks: Int)?
        test.run(until: "the client's socket is idle with its keepalive timer") {
            let rows = Self.procNetTCP().split(separator: "\n").dropFirst()
            // local, remote 0100007F:<server port>, state 01 (established), queues, "timer:due".
            timer = rows.map { $0.split(separator: " ") }
                .first { $0.count > 5 && $0[2].hasSuffix(String(format: ":%04X", server.port)) && $0[3] == "01" }
                .flatMap { fields in
                    let parts = fields[5].split(separator: ":")
                    return Int(parts[0], radix: 16).flatMap { kind in Int(parts[1], radix: 16).map { (kind, $0) } }
                }
            return timer?.kind == 2
        }
        let due = try XCTUnwrap(timer?.dueTicks)
        XCTAssertLessThanOrEqual(due, 30 * ticksPerSecond)
        XCTAssertGreaterThan(due, 20 * ticksPerSecond)
        XCTAssertEqual(RedisConnection.keepAlive, TCPKeepAlive(idleSeconds: 30, intervalSeconds: 10, probes: 3))
        connection.close()
    }

    /// /proc/net/tcp, read to its end (its size shows as 0, which Foundation's readers trust).
    private static func procNetTCP() -> String {
        let fd = Glibc.open("/proc/net/tcp", O_RDONLY)
        guard fd >= 0 else { return "" }
        defer { Glibc.close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count <= 0 { break }
            bytes += chunk[..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    func testARefusedConnectionIsUnreachable() throws {
        let listener = try TCPListener(loop: loop, address: SocketAddress(ip: "127.0.0.1", port: 0)!, reusePort: false) { $0.close() }
        let port = try XCTUnwrap(listener.localAddress?.port)
        listener.close()
        let (_, outcome) = open(endpoint(port))
        guard case .failure(.unreachable(let reason)) = outcome else { return XCTFail("got \(String(describing: outcome))") }
        XCTAssertTrue(reason.contains("refused"), reason)
    }

    func testTheServerGoingAwayEndsTheConnection() throws {
        let server = try RedisServer()
        let (connection, opened) = open(endpoint(server.port))
        XCTAssertNotNil(try opened?.get())
        var ended: RedisConnection.Failure?
        var reply: Result<RedisReply, RedisConnection.Failure>?
        // The connection's own onEnded was set by `open`; a command under way sees the end too.
        connection.send(RedisCommand(["BLPOP", "nothing", "0"])) { reply = $0 }
        server.stop()
        test.run(until: "the command ended") { reply != nil }
        if case .failure(let failure) = reply { ended = failure }
        guard case .closed = ended else { return XCTFail("expected closed, got \(String(describing: reply))") }
        XCTAssertFalse(connection.isReady)
    }

    func testClosingWithCommandsUnderWayCompletesThemAsClosed() throws {
        let server = try RedisServer()
        defer { server.stop() }
        let (connection, _) = open(endpoint(server.port))
        var results: [Result<RedisReply, RedisConnection.Failure>] = []
        connection.send(RedisCommand(["BLPOP", "nothing", "0"])) { results.append($0) }
        connection.send(RedisCommand(["PING"])) { results.append($0) }
        connection.close()
        XCTAssertFalse(connection.send(RedisCommand(["PING"])) { _ in })
        test.run(until: "both completed") { results.count == 2 }
        for result in results {
            guard case .failure(.closed) = result else { return XCTFail("got \(result)") }
        }
    }

    func testAHostTheResolverRefusesAtOnceEndsTheConnectionAfterTheInitialiserReturned() throws {
        // uv_getaddrinfo refuses a name over 255 bytes before it returns (rule 2: never inside init).
        var constructed = false
        var ended: RedisConnection.Failure?
        var endedBeforeReturn = false
        let connection = RedisConnection(loop: loop, endpoint: RedisEndpoint(host: String(repeating: "a", count: 300), port: 6379),
                                         timeoutMilliseconds: 1000, onReady: { XCTFail("ready") },
                                         onEnded: { endedBeforeReturn = !constructed; ended = $0 })
        constructed = true
        test.run(until: "the connection ended") { ended != nil }
        XCTAssertFalse(endedBeforeReturn, "onEnded ran inside the initialiser")
        guard case .unreachable(let reason) = ended else { return XCTFail("got \(String(describing: ended))") }
        XCTAssertTrue(reason.hasPrefix("cannot resolve aaaa"), reason)
        XCTAssertFalse(connection.isReady)
    }
}
