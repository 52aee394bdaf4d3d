import EventLoop
import Foundation
import LocalHTTP
import LoopTestSupport
import XCTest

/// Answers given later with a deadline (`LocalAnswer.laterWithin`), over a loopback connection:
/// the deadline's response when the handler never answers, the handler's when it answers first,
/// and the deadline's timer closed either way, or with the server (the leak check).
final class LocalAnswerDeadlineTests: XCTestCase {
    private let tooLate = LocalResponse(status: 503, body: "did not answer in time")

    /// A server whose `/later` answers later within `deadlineMilliseconds`, through `answer` (nil:
    /// never), and whose other paths answer at once.
    private func server(on loop: EventLoop, deadlineMilliseconds: UInt64, answer: LocalResponse?) throws -> LocalHTTPServer {
        let deadline = LocalDeadline(milliseconds: deadlineMilliseconds, response: tooLate)
        return try LocalHTTPServer(loop: loop, address: SocketAddress(ip: "127.0.0.1", port: 0)!,
                                   badRequest: { LocalResponse(status: 400, body: $0) }) { request in
            guard request.path == "/later" else { return .now(LocalResponse(status: 200, body: "now \(request.path)")) }
            return .laterWithin(deadline) { reply in
                guard let answer else { return }
                Thread.detachNewThread { reply.send(answer) }
            }
        }
    }

    func testAHandlerThatNeverAnswersGetsTheDeadlinesResponseInTime() throws {
        let test = try LeakCheckedLoop()
        let server = try server(on: test.loop, deadlineMilliseconds: 100, answer: nil)
        let client = try Client(loop: test.loop, to: server.boundAddress!)
        client.send("GET /later HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let began = test.loop.nowMilliseconds
        test.run(until: "the deadline's answer", seconds: 3) { client.text.contains("did not answer in time") }
        XCTAssertTrue(client.text.hasPrefix("HTTP/1.1 503"), client.text)
        XCTAssertGreaterThanOrEqual(test.loop.nowMilliseconds - began, 90)
        // The connection reads again: the next request is answered.
        client.send("GET /next HTTP/1.1\r\nHost: localhost\r\n\r\n")
        test.run(until: "the next answer") { client.text.contains("now /next") }
        client.close()
        server.close()
        test.closeAndCheckForLeaks()
    }

    func testTheHandlersAnswerWinsAndTheDeadlineSendsNothingAfterIt() throws {
        let test = try LeakCheckedLoop()
        let server = try server(on: test.loop, deadlineMilliseconds: 200, answer: LocalResponse(status: 204, body: ""))
        let client = try Client(loop: test.loop, to: server.boundAddress!)
        client.send("GET /later HTTP/1.1\r\nHost: localhost\r\n\r\n")
        test.run(until: "the handler's answer") { client.text.contains("HTTP/1.1 204") }
        // Past the deadline: nothing more on the connection, and its timer is closed (the leak
        // check below, with the connection still open till then, would count it).
        test.run(forMilliseconds: 400)
        XCTAssertFalse(client.text.contains("503"), client.text)
        XCTAssertEqual(client.text.components(separatedBy: "HTTP/1.1 ").count, 2, client.text)
        client.close()
        server.close()
        test.closeAndCheckForLeaks()
    }

    func testTheDeadlinesTimerClosesWithTheServer() throws {
        let test = try LeakCheckedLoop()
        // A deadline far past the test: only the connection's close can close its timer.
        let server = try server(on: test.loop, deadlineMilliseconds: 60_000, answer: nil)
        let client = try Client(loop: test.loop, to: server.boundAddress!)
        client.send("GET /later HTTP/1.1\r\nHost: localhost\r\n\r\n")
        test.run(forMilliseconds: 100)
        // The waiting connection does not read (it cannot hear the client close): the server's
        // close closes it and the deadline's timer, which would otherwise keep the loop running.
        client.close()
        server.close()
        test.closeAndCheckForLeaks()
    }
}

/// A loopback HTTP client on the test's loop: what it read, as text.
private final class Client: ByteStreamDelegate {
    private var stream: TCPStream?
    private(set) var text = ""

    init(loop: EventLoop, to address: SocketAddress) throws {
        stream = try TCPStream.connect(on: loop, to: address, delegate: self)
    }

    func send(_ request: String) {
        var bytes = Array(request.utf8)
        bytes.withUnsafeMutableBytes { stream?.write(UnsafeRawBufferPointer($0)) }
    }

    func close() {
        stream?.close()
        stream = nil
    }

    func stream(_ stream: any ByteStream, didConnectWith error: UVError?) {
        if error == nil { stream.startReading() }
    }

    func stream(_ stream: any ByteStream, didRead bytes: UnsafeRawBufferPointer) {
        text += String(decoding: bytes, as: UTF8.self)
    }

    func stream(_ stream: any ByteStream, didEndWith error: UVError?) {}
}
