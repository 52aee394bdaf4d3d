import EventLoop
import HTTP1
@testable import HTTPClient
import XCTest

/// An upstream connection against a server on the same loop that answers with fixed bytes, in
/// one write. The connection calls its owner without a retain during the read that carries the
/// response, and an owner may let itself go as it completes, in that read (`sendHTTPRequest`'s
/// does): only the read's hold on its owner (UpstreamConnection's `holdingOwner`) keeps it alive
/// then. Without the hold, the owner that logs its own end sees it in an optimized build
/// (`swift build -c release --build-tests -Xswiftc -enable-testing`); a debug build copies the
/// owner around each call anyway.
final class ClientExchangeTests: XCTestCase {
    func testAResponseCompletesTheRequestOnce() throws {
        let results = try exchange(answering: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
        XCTAssertEqual(results.count, 1)
        XCTAssertEqual(try results.first?.get().status, 200)
        XCTAssertEqual(try results.first?.get().body, Array("hello".utf8))
    }

    func testAnInterimResponseAndTheFinalOneInOneRead() throws {
        let results = try exchange(answering: "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok")
        XCTAssertEqual(results.count, 1)
        XCTAssertEqual(try results.first?.get().status, 201)
        XCTAssertEqual(try results.first?.get().body, Array("ok".utf8))
    }

    func testABodyOverTheLimitEndsTheRequestAtItsHead() throws {
        // The exchange completes inside its head callback, then reads its own request there.
        let results = try exchange(answering: "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789",
                                   limits: HTTPClientLimits(maxBodyBytes: 4))
        XCTAssertEqual(results.count, 1)
        guard case .failure(let error)? = results.first else { return XCTFail("no failure: \(results)") }
        XCTAssertEqual(error, .bodyTooLarge(limit: 4))
    }

    func testAnOwnerLetGoInItsOwnCallLivesToTheCallsEnd() throws {
        // The connection lets its owner go (`close`), and so does the only other holder, inside
        // the owner's call at the message's end: the read's hold keeps it until the read is over.
        let loop = try EventLoop()
        let server = try AnsweringServer(on: loop, response: Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".utf8))
        let log = EventLog()
        let connection = UpstreamConnection(loop: loop, host: "127.0.0.1", tls: nil,
                                            headerLimits: HeaderLimits(maxHeadBytes: 8192, maxFieldCount: 32),
                                            deadlinePolicy: HTTPClientLimits().deadlinePolicy, pool: nil)
        var holder: LettingGoOwner? = LettingGoOwner(log: log)
        holder?.letGo = { holder = nil }
        connection.begin(for: holder!)
        Array("GET / HTTP/1.1\r\nHost: a\r\n\r\n".utf8).withUnsafeBytes { connection.write($0) }
        connection.connect(to: try XCTUnwrap(SocketAddress(ip: "127.0.0.1", port: server.port)))
        let start = EventLoop.monotonicNanoseconds()
        while !log.entries.contains("gone") && EventLoop.monotonicNanoseconds() - start < 5_000_000_000 {
            loop.runOnce(wait: true)
        }
        XCTAssertEqual(log.entries, ["head", "message end", "gone"])
        server.close()
        for _ in 0..<10 { loop.runOnce(wait: false) }
        XCTAssertEqual(loop.openHandles, 0)
        try loop.close()
    }

    /// Sends a GET to a server that answers `response` once the request's head arrived, runs the
    /// loop until it completed and everything closed, and returns each completion.
    private func exchange(answering response: String, limits: HTTPClientLimits = HTTPClientLimits()) throws
        -> [Result<HTTPClientResponse, HTTPClientError>] {
        let loop = try EventLoop()
        let server = try AnsweringServer(on: loop, response: Array(response.utf8))
        var results: [Result<HTTPClientResponse, HTTPClientError>] = []
        let request = HTTPClientRequest(method: "GET", host: "127.0.0.1", port: server.port, target: "/")
        sendHTTPRequest(request, on: loop, limits: limits) { results.append($0) }
        let start = EventLoop.monotonicNanoseconds()
        while results.isEmpty && EventLoop.monotonicNanoseconds() - start < 5_000_000_000 {
            loop.runOnce(wait: true)
        }
        server.close()
        // Close callbacks, and any completion that should not come.
        for _ in 0..<10 { loop.runOnce(wait: false) }
        XCTAssertEqual(loop.openHandles, 0)
        try loop.close()
        return results
    }
}

/// A listener on 127.0.0.1 whose connections get `response` once a request head arrived.
private final class AnsweringServer {
    private let listener: TCPListener
    private var connections: [TCPStream] = []
    let port: UInt16

    init(on loop: EventLoop, response: [UInt8]) throws {
        weak var server: AnsweringServer?
        listener = try TCPListener(loop: loop, address: XCTUnwrap(SocketAddress(ip: "127.0.0.1", port: 0)), reusePort: false) { stream in
            stream.delegate = Answerer(response: response)
            stream.startReading()
            server?.connections.append(stream)
        }
        port = try XCTUnwrap(listener.localAddress?.port)
        server = self
    }

    func close() {
        listener.close()
        for connection in connections { connection.close() }
    }
}

private final class Answerer: ByteStreamDelegate {
    private let response: [UInt8]
    private var received: [UInt8] = []

    init(response: [UInt8]) { self.response = response }

    func stream(_ stream: any ByteStream, didRead bytes: UnsafeRawBufferPointer) {
        received += bytes
        if received.count >= 4 && Array(received.suffix(4)) == Array("\r\n\r\n".utf8) {
            response.withUnsafeBytes { stream.write($0) }
        }
    }

    func stream(_ stream: any ByteStream, didEndWith error: UVError?) { stream.close() }
}

private final class EventLog {
    var entries: [String] = []
}

/// An owner that, at the message's end, closes its connection and lets `letGo` drop the only
/// other reference to it, then logs the end of its call; its deinit logs "gone".
private final class LettingGoOwner: UpstreamExchangeOwner {
    let log: EventLog
    var letGo: (() -> Void)?

    init(log: EventLog) { self.log = log }
    deinit { log.entries.append("gone") }

    func upstream(_ upstream: UpstreamConnection, didReceiveHead head: HTTPHead) -> HTTP1Parser.BodyExpectation {
        log.entries.append("head")
        return .framed
    }

    func upstreamDidFinishMessage(_ upstream: UpstreamConnection) -> Bool {
        upstream.close()
        let letGo = self.letGo
        self.letGo = nil
        letGo?()
        log.entries.append("message end")
        return true
    }

    func upstream(_ upstream: UpstreamConnection, didReceiveBody bytes: UnsafeRawBufferPointer) {}
    func upstream(_ upstream: UpstreamConnection, didStartChunkOfSize size: UInt64) {}
    func upstreamDidFinishChunk(_ upstream: UpstreamConnection) {}
    func upstreamDidParseRead(_ upstream: UpstreamConnection) {}
    func upstreamReadOverran(_ upstream: UpstreamConnection) -> Bool { false }
    func upstreamDidFinishResponse(_ upstream: UpstreamConnection) {}
    func upstream(_ upstream: UpstreamConnection, didFail failure: ConnectionFailure) { log.entries.append("failed") }
    func upstreamDidDrain(_ upstream: UpstreamConnection) {}
    func upstream(_ upstream: UpstreamConnection, didUpgradeWith bytes: UnsafeRawBufferPointer) {}
    func upstreamTunnel(_ upstream: UpstreamConnection, didRead bytes: UnsafeRawBufferPointer) {}
    func upstreamTunnelDidEnd(_ upstream: UpstreamConnection) {}
}
