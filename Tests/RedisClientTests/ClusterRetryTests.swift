import EventLoop
import LoopTestSupport
import RedisClient
import RedisProtocol
@testable import Tokens
import XCTest

/// One scripted cluster node owning every slot that answers each GET `-TRYAGAIN`: what no real
/// cluster does on cue (a migration splitting a script's keys), timed. It checks every command it
/// receives and records the GETs' keys in order.
private final class TryAgainNode: ByteStreamDelegate {
    private(set) var listener: TCPListener!
    private(set) var port: UInt16 = 0
    private var streams: [TCPStream] = []
    private var reader = RESPReader()
    private(set) var gets: [String] = []
    private(set) var unexpected: [String] = []

    init(loop: EventLoop) throws {
        listener = try TCPListener(loop: loop, address: SocketAddress(ip: "127.0.0.1", port: 0)!, reusePort: false) { [unowned self] stream in
            stream.delegate = self
            stream.startReading()
            streams.append(stream)
        }
        port = try XCTUnwrap(listener.localAddress?.port)
    }

    func stop() {
        streams.forEach { $0.close() }
        listener.close()
    }

    func stream(_ stream: any ByteStream, didRead bytes: UnsafeRawBufferPointer) {
        reader.feed(bytes)
        while let command = try? reader.next() {
            let words = command.elements?.compactMap(\.text) ?? []
            let answer: String
            switch words.first {
            case "PING" where words.count == 1:
                answer = "+PONG\r\n"
            case "CLUSTER" where words == ["CLUSTER", "SLOTS"]:
                answer = "*1\r\n*3\r\n:0\r\n:16383\r\n*3\r\n$9\r\n127.0.0.1\r\n:\(port)\r\n$2\r\nid\r\n"
            case "GET" where words.count == 2:
                gets.append(words[1])
                answer = "-TRYAGAIN Multiple keys request during rehashing of slot\r\n"
            default:
                unexpected.append(words.joined(separator: " "))
                answer = "-ERR unexpected\r\n"
            }
            Array(answer.utf8).withUnsafeBytes { stream.write($0) }
        }
    }

    func stream(_ stream: any ByteStream, didEndWith error: UVError?) {
        stream.close()
    }
}

final class ClusterRetryTests: XCTestCase {
    /// TRYAGAINs arriving closer together than the retry delay join the next round of retries
    /// instead of postponing it: the first command is asked again while others keep coming.
    func testATryAgainRoundIsNotPostponedByLaterOnes() throws {
        let test = try LeakCheckedLoop()
        let node = try TryAgainNode(loop: test.loop)
        var ready = false
        let commands = ClusterCommands(loop: test.loop, seeds: RedisClusterSeeds(seeds: [RedisEndpoint(host: "127.0.0.1", port: node.port)]),
                                       timeoutMilliseconds: 5000, onReady: { ready = true }, onEnded: { XCTFail("ended: \($0)") })
        test.run(until: "the slot map is in") { ready }
        var answers = 0
        XCTAssertTrue(commands.send(RedisCommand(["GET", "first"])) { _ in answers += 1 })
        // A TRYAGAIN every 5 ms or so for 400 ms: each one restarting the 20 ms timer left "first"
        // waiting all along.
        let started = test.loop.nowMilliseconds
        var sent = 0
        while test.loop.nowMilliseconds - started < 400 {
            XCTAssertTrue(commands.send(RedisCommand(["GET", .text("later-\(sent)")])) { _ in answers += 1 })
            sent += 1
            test.run(forMilliseconds: 5)
        }
        XCTAssertGreaterThanOrEqual(node.gets.count { $0 == "first" }, 5, "\"first\" was not asked again every round")
        XCTAssertEqual(node.unexpected, [])
        commands.close()
        test.run(until: "every command completed") { answers == sent + 1 }
        node.stop()
        test.closeAndCheckForLeaks()
    }
}
