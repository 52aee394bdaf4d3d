// A ProxyWorker on a leak-checked loop, with a real client and a real upstream on the same
// loop (loopback only): after each exchange the worker drains, and the test ends the way the
// EventLoop tests end, every handle closed and the loop closing cleanly. A client connection's
// timer, an upstream connection's socket, a pool's idle connection or the worker's wake-up left
// open fails the test.

import ByteBuffers
import Foundation
import Config
@testable import EventLoop
import Logging
import LoopTestSupport
@testable import Proxy
import XCTest

final class ProxyWorkerLeakTests: XCTestCase {
    func testEveryHandleClosesAfterAProxiedExchange() throws {
        let test = try LeakCheckedLoop()
        let upstream = try AnsweringUpstream(on: test.loop)
        let worker = try startWorker(on: test, routeTo: upstream.address)
        let client = try TestClient(on: test, to: worker)

        client.send(head("GET /orders/1 HTTP/1.1", "Host: 127.0.0.1"))
        test.run(until: "the upstream's answer reached the client") { client.hasWholeResponse }
        XCTAssertTrue(client.receivedText.hasSuffix("\r\n\r\nok"), client.receivedText)
        XCTAssertTrue(client.receivedText.hasPrefix("HTTP/1.1 200 OK\r\n"), client.receivedText)
        XCTAssertEqual(upstream.requestCount, 1)

        client.close()
        stopAndCheckForLeaks(worker, on: test, closing: upstream)
    }

    func testEveryHandleClosesAfterARequestNoRouteTakes() throws {
        let test = try LeakCheckedLoop()
        let upstream = try AnsweringUpstream(on: test.loop)
        let worker = try startWorker(on: test, routeTo: upstream.address, pathPrefix: "/orders/")
        let client = try TestClient(on: test, to: worker)

        client.send(head("GET /elsewhere HTTP/1.1", "Host: 127.0.0.1"))
        test.run(until: "the 404 reached the client") { client.hasWholeResponse }
        XCTAssertTrue(client.receivedText.hasPrefix("HTTP/1.1 404 "), client.receivedText)
        XCTAssertEqual(upstream.requestCount, 0, "a refused request goes nowhere")

        client.close()
        stopAndCheckForLeaks(worker, on: test, closing: upstream)
    }

    func testEveryHandleClosesAfterAMalformedRequestTheWorkerClosesOn() throws {
        let test = try LeakCheckedLoop()
        let upstream = try AnsweringUpstream(on: test.loop)
        let worker = try startWorker(on: test, routeTo: upstream.address)
        let client = try TestClient(on: test, to: worker)

        client.send("GET / HTTP/1.1\r\nHost 127.0.0.1\r\n\r\n")
        test.run(until: "the worker answered and ended the connection") { client.endedCleanly != nil }
        XCTAssertTrue(client.receivedText.hasPrefix("HTTP/1.1 400 "), client.receivedText)

        client.close()
        stopAndCheckForLeaks(worker, on: test, closing: upstream)
    }

    func testEveryHandleClosesAfterAnUpstreamThatRefusesConnections() throws {
        let test = try LeakCheckedLoop()
        // A port that listened a moment ago and no longer does: the connect is refused.
        let gone = try AnsweringUpstream(on: test.loop)
        let refusing = gone.address
        gone.close()
        let worker = try startWorker(on: test, routeTo: refusing)
        let client = try TestClient(on: test, to: worker)

        client.send(head("GET /orders/1 HTTP/1.1", "Host: 127.0.0.1"))
        test.run(until: "the 502 reached the client") { client.hasWholeResponse }
        XCTAssertTrue(client.receivedText.hasPrefix("HTTP/1.1 502 "), client.receivedText)

        client.close()
        stopAndCheckForLeaks(worker, on: test, closing: nil)
    }

    func testAKeepAliveConnectionKeepsItsWorkspaceUntilItStaysIdleThroughASweep() throws {
        let test = try LeakCheckedLoop()
        let upstream = try AnsweringUpstream(on: test.loop)
        let worker = try startWorker(on: test, routeTo: upstream.address)
        let client = try TestClient(on: test, to: worker)
        func answers() -> Int { client.receivedText.components(separatedBy: "HTTP/1.1 200 OK\r\n").count - 1 }

        client.send(head("GET /orders/1 HTTP/1.1", "Host: 127.0.0.1"))
        test.run(until: "the first answer reached the client") { answers() == 1 && client.hasWholeResponse }
        XCTAssertEqual(worker.workspaces.spareCount, 0, "the idle connection keeps its workspace for its next request")
        client.send(head("GET /orders/2 HTTP/1.1", "Host: 127.0.0.1"))
        test.run(until: "the second answer reached the client") { answers() == 2 && client.receivedText.hasSuffix("ok") }
        XCTAssertEqual(worker.workspaces.spareCount, 0)

        XCTAssertEqual(worker.workspaceSweep.kept, 1)
        worker.sweepWorkspaces()
        XCTAssertEqual(worker.workspaces.spareCount, 0, "a connection that went idle since the last pass keeps its workspace")
        worker.sweepWorkspaces()
        XCTAssertEqual(worker.workspaces.spareCount, 1, "idle through a whole pass, it gives it back")
        XCTAssertEqual(worker.workspaceSweep.kept, 0)

        client.send(head("GET /orders/3 HTTP/1.1", "Host: 127.0.0.1"))
        test.run(until: "the third answer reached the client") { answers() == 3 && client.receivedText.hasSuffix("ok") }
        XCTAssertEqual(worker.workspaces.spareCount, 0, "the next request took a workspace from the pool")
        XCTAssertEqual(upstream.requestCount, 3)
        XCTAssertEqual(worker.workspaceSweep.kept, 1)
        test.run(until: "the worker's sweep took the idle connection's workspace back",
                 seconds: 5 * WorkspaceSweep.intervalMilliseconds / 1000 + 2) { worker.workspaces.spareCount == 1 }
        XCTAssertEqual(worker.workspaceSweep.kept, 0)

        client.close()
        stopAndCheckForLeaks(worker, on: test, closing: upstream)
    }

    // MARK: The worker

    /// A worker on `test`'s loop listening on a loopback port, with one route to `upstream`.
    private func startWorker(on test: LeakCheckedLoop, routeTo upstream: SocketAddress, pathPrefix: String = "/") throws -> ProxyWorker {
        let config = RelayConfig(listen: HostPort(host: "127.0.0.1", port: 0), admin: nil,
                                 routes: [route(to: "http://\(upstream)", pathPrefix: pathPrefix)])
        let listen = try XCTUnwrap(SocketAddress(ip: "127.0.0.1", port: 0))
        return try ProxyWorker(loop: test.loop, mailbox: SettingsMailbox(ProxySettings(config: config)), budget: ConnectionBudget(),
                               address: listen, tlsAddress: nil, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }),
                               metrics: nil)
    }

    /// Stops the worker as `RelayServer.stop` does, closes the test's upstream and checks that
    /// the loop runs out of handles: the worker's own, its connections' and its pools' included.
    private func stopAndCheckForLeaks(_ worker: ProxyWorker, on test: LeakCheckedLoop, closing upstream: AnsweringUpstream?,
                                      file: StaticString = #filePath, line: UInt = #line) {
        worker.stopSignal.wake()
        upstream?.close()
        test.closeAndCheckForLeaks(file: file, line: line)
        XCTAssertTrue(worker.isDraining, file: file, line: line)
    }
}

/// A client of the worker: connects, sends, and records what comes back.
private final class TestClient: ByteStreamDelegate {
    let stream: TCPStream
    private(set) var received = ByteBuffer()
    /// Set when the worker ended the connection: true for its FIN.
    private(set) var endedCleanly: Bool?
    var receivedText: String { String(decoding: received.readableBytes, as: UTF8.self) }

    /// A whole response head arrived, and as many body bytes as its `Content-Length` says.
    var hasWholeResponse: Bool {
        let text = receivedText
        guard let end = text.range(of: "\r\n\r\n") else { return false }
        let lengthLine = text[..<end.lowerBound].split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
        guard let lengthLine, let length = Int(lengthLine.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) else {
            return false
        }
        return text.utf8.count - text[..<end.upperBound].utf8.count >= length
    }

    init(on test: LeakCheckedLoop, to worker: ProxyWorker) throws {
        let address = try XCTUnwrap(worker.boundAddress)
        var connected: UVError??
        let waiter = ConnectWaiter { connected = .some($0) }
        stream = try TCPStream.connect(on: test.loop, to: address, delegate: waiter)
        test.run(until: "the client connected") { connected != nil }
        XCTAssertEqual(connected, .some(nil), "connect failed")
        stream.delegate = self
        stream.startReading()
    }

    func send(_ text: String) {
        Array(text.utf8).withUnsafeBytes { stream.write($0) }
    }

    func close() { stream.close() }

    func stream(_ stream: any ByteStream, didRead bytes: UnsafeRawBufferPointer) { received.append(bytes) }

    func stream(_ stream: any ByteStream, didEndWith error: UVError?) { endedCleanly = error == nil }
}

/// The delegate of a connect under way: reports its result.
private final class ConnectWaiter: ByteStreamDelegate {
    let connected: (UVError?) -> Void
    init(_ connected: @escaping (UVError?) -> Void) { self.connected = connected }
    func stream(_ stream: any ByteStream, didRead bytes: UnsafeRawBufferPointer) {}
    func stream(_ stream: any ByteStream, didEndWith error: UVError?) {}
    func stream(_ stream: any ByteStream, didConnectWith error: UVError?) { connected(error) }
}

/// An upstream on a loopback port that answers every request head with `200 ok` and closes its
/// side of a connection when the worker closes its own.
private final class AnsweringUpstream {
    private var listener: TCPListener?
    let address: SocketAddress
    private var connections: [ObjectIdentifier: Answerer] = [:]
    private(set) var requestCount = 0

    init(on loop: EventLoop) throws {
        let any = try XCTUnwrap(SocketAddress(ip: "127.0.0.1", port: 0))
        weak var upstream: AnsweringUpstream?
        let listener = try TCPListener(loop: loop, address: any, reusePort: false) { stream in
            upstream?.accept(stream)
        }
        address = try XCTUnwrap(listener.localAddress)
        self.listener = listener
        upstream = self
    }

    private func accept(_ stream: TCPStream) {
        let answerer = Answerer(upstream: self)
        connections[ObjectIdentifier(stream)] = answerer
        stream.delegate = answerer
        stream.startReading()
    }

    /// Stops listening; connections close when the worker closes its side.
    func close() {
        listener?.close()
        listener = nil
    }

    fileprivate func answered() { requestCount += 1 }

    fileprivate func closed(_ stream: any ByteStream) {
        connections.removeValue(forKey: ObjectIdentifier(stream as AnyObject))
    }

    /// One accepted connection: each request head (a blank line) gets the answer.
    private final class Answerer: ByteStreamDelegate {
        unowned let upstream: AnsweringUpstream
        private var pending: [UInt8] = []

        init(upstream: AnsweringUpstream) { self.upstream = upstream }

        func stream(_ stream: any ByteStream, didRead bytes: UnsafeRawBufferPointer) {
            pending.append(contentsOf: bytes)
            let blankLine = Array("\r\n\r\n".utf8)
            while let end = pending.firstRange(of: blankLine) {
                pending.removeSubrange(..<end.upperBound)
                upstream.answered()
                Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".utf8).withUnsafeBytes { stream.write($0) }
            }
        }

        func stream(_ stream: any ByteStream, didEndWith error: UVError?) { stream.close() }

        func streamDidClose(_ stream: any ByteStream) { upstream.closed(stream) }
    }
}
