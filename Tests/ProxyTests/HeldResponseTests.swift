import ByteBuffers
import EventLoop
@testable import Proxy
import XCTest

/// The held response: what the upstream read that carried a response head brought is held until
/// that read is parsed, then released to the client once, or retracted for a local answer.
final class HeldResponseTests: XCTestCase {
    private let get = head("GET /orders/1 HTTP/1.1", "Host: relay")
    private let ok = head("HTTP/1.1 200 OK", "Content-Length: 5")

    /// An exchange whose response head was just decided (`.respond`): its head is held.
    private func respondingExchange() -> Exchange {
        var driver = ExchangeDriver()
        _ = driver.request(get)
        driver.requestEnds()
        XCTAssertEqual(respondFraming(driver.response(ok)), .contentLength)
        return driver.exchange
    }

    func testNothingReachesTheClientWhileTheHeadsReadIsParsed() {
        let client = RecordingStream()
        var held = HeldResponse()
        held.hold { $0.append("HEAD;") }
        held.send(bytes("hello"), to: client)
        XCTAssertTrue(held.isHolding)
        XCTAssertEqual(client.written, "")
    }

    func testReleaseSendsTheHeadAndItsBytesOnceThenBytesGoStraightThrough() {
        let client = RecordingStream()
        var exchange = respondingExchange()
        var held = HeldResponse()
        held.hold { $0.append("HEAD;") }
        held.send(bytes("hel"), to: client)
        XCTAssertTrue(held.release(to: client, exchange: &exchange))
        XCTAssertEqual(client.written, "HEAD;hel")
        XCTAssertTrue(exchange.responseHeadSent, "the exchange's held head counts as sent")
        XCTAssertFalse(held.release(to: client, exchange: &exchange), "released once")
        held.send(bytes("lo"), to: client)
        XCTAssertEqual(client.written, "HEAD;hello")
    }

    func testRetractDropsTheHeldResponseAndTheExchangeAwaitsOneAgain() {
        let client = RecordingStream()
        var exchange = respondingExchange()
        var held = HeldResponse()
        held.hold { $0.append("HEAD;") }
        XCTAssertTrue(held.retract(exchange: &exchange))
        XCTAssertFalse(held.isHolding)
        XCTAssertFalse(exchange.releaseHead(), "nothing of it reaches the client")
        XCTAssertFalse(held.release(to: client, exchange: &exchange))
        XCTAssertEqual(client.written, "")
    }

    func testRetractAfterTheReleaseIsRefused() {
        let client = RecordingStream()
        var exchange = respondingExchange()
        var held = HeldResponse()
        held.hold { $0.append("HEAD;") }
        held.release(to: client, exchange: &exchange)
        XCTAssertFalse(held.retract(exchange: &exchange), "part of the response is out")
        XCTAssertEqual(client.written, "HEAD;")
    }

    func testAChunkStartJoinsTheHeldBytesOrGoesOutAtOnce() {
        let client = RecordingStream()
        var exchange = respondingExchange()
        var scratch = ByteBuffer()
        var held = HeldResponse()
        held.hold { $0.append("HEAD;") }
        held.sendChunkStart(size: 26, to: client, scratch: &scratch)
        XCTAssertEqual(client.written, "")
        held.release(to: client, exchange: &exchange)
        held.sendChunkStart(size: 255, to: client, scratch: &scratch)
        XCTAssertEqual(client.written, "HEAD;1a\r\nff\r\n")
    }

    private func bytes(_ text: String) -> UnsafeRawBufferPointer {
        let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: text.utf8.count, alignment: 1)
        storage.copyBytes(from: Array(text.utf8))
        addTeardownBlock { storage.deallocate() }
        return UnsafeRawBufferPointer(storage)
    }
}

/// A client stream that records what is written to it; nothing else of it is used.
private final class RecordingStream: ByteStream {
    private(set) var bytes: [UInt8] = []
    var written: String { String(decoding: bytes, as: UTF8.self) }

    var delegate: (any ByteStreamDelegate)?
    var loop: EventLoop { preconditionFailure("a recording stream has no loop") }
    var isClosed: Bool { false }
    var queuedBytes: Int { 0 }
    var isAboveHighWater: Bool { false }
    var failureReason: String? { nil }
    var isHandshaking: Bool { false }
    func startReading() {}
    func stopReading() {}
    func write(_ bytes: UnsafeRawBufferPointer) { self.bytes.append(contentsOf: bytes) }
    func closeAfterWrites(lingerMilliseconds: UInt64, stallMilliseconds: UInt64) {}
    func close() {}
    func peerAddress() -> SocketAddress? { nil }
}
