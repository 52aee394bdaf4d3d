@testable import EventLoop
#if canImport(Glibc)
import Glibc
#endif
import LoopTestSupport
import XCTest

/// A delegate that receives itself when told the socket is readable (as a TLS stream does),
/// in small pieces, and records what it got.
private final class ReceivingRecorder: ByteStreamDelegate {
    var received: [UInt8] = []
    var receipts: [TCPStream.Receipt] = []
    var readinessReports = 0
    /// Bytes that reached `didRead` instead (libuv read them): none expected.
    var delivered = 0
    var isClosed = false
    /// Receives per report, at most.
    var receivesPerReport = 8
    /// Called after each receipt, e.g. to stop reading from inside the report.
    var afterReceipt: ((TCPStream, TCPStream.Receipt) -> Void)?

    var ended: Bool { receipts.last == .ended }

    func streamIsReadable(_ stream: TCPStream) {
        readinessReports += 1
        let space = UnsafeMutableRawBufferPointer.allocate(byteCount: 1000, alignment: 1)
        defer { space.deallocate() }
        for _ in 0..<receivesPerReport {
            let receipt = stream.receive(into: space)
            if case .received(let count) = receipt { received += space.prefix(count) }
            if receipts.last != receipt || receipt == .wouldBlock { receipts.append(receipt) }
            afterReceipt?(stream, receipt)
            guard case .received = receipt else { return }
        }
    }

    func stream(_ stream: any ByteStream, didRead bytes: UnsafeRawBufferPointer) {
        delivered += bytes.count
    }

    func stream(_ stream: any ByteStream, didEndWith error: UVError?) {}

    func streamDidClose(_ stream: any ByteStream) {
        isClosed = true
    }
}

/// `TCPStream.reportsReadiness`: libuv reports the socket readable without reading it, and the
/// delegate receives (`receive(into:)`), only while the stream is reading.
final class ReadinessReportTests: XCTestCase {
    private struct Connection {
        let test: LeakCheckedLoop
        let listener: TCPListener
        let sender: TCPStream
        let senderEvents: StreamRecorder
        let stream: TCPStream
        let events: ReceivingRecorder

        func close() {
            sender.close()
            stream.close()
            listener.close()
            test.run(until: "both streams closed") { senderEvents.isClosed && events.isClosed }
            test.closeAndCheckForLeaks()
        }
    }

    private func connect() throws -> Connection {
        let test = try LeakCheckedLoop()
        let server = try LoopbackServer(on: test.loop, startReading: false)
        let senderEvents = StreamRecorder()
        let sender = try TCPStream.connect(on: test.loop, to: server.address, delegate: senderEvents)
        test.run(until: "connected and accepted") { senderEvents.connectResult != nil && !server.accepted.isEmpty }
        let stream = try XCTUnwrap(server.accepted.first).stream
        let events = ReceivingRecorder()
        stream.delegate = events
        stream.reportsReadiness = true
        return Connection(test: test, listener: server.listener, sender: sender, senderEvents: senderEvents,
                          stream: stream, events: events)
    }

    func testTheDelegateReceivesEverythingInOrderThenTheEndAndLibuvReadsNothing() throws {
        let connection = try connect()
        let payload = patternBytes(300_000)
        connection.stream.startReading()
        payload.withUnsafeBytes { connection.sender.write($0) }
        connection.sender.closeAfterWrites()
        connection.test.run(until: "the end was received") { connection.events.ended }
        XCTAssertTrue(connection.events.received == payload)
        XCTAssertEqual(connection.events.delivered, 0, "libuv read nothing itself")
        XCTAssertGreaterThan(connection.events.readinessReports, 1, "a report's receives are bounded by the delegate")
        connection.close()
    }

    func testAStreamThatStoppedReadingReceivesNothingUntilItStartsAgain() throws {
        let connection = try connect()
        let payload = patternBytes(5000)
        connection.events.afterReceipt = { stream, receipt in
            if case .received = receipt { stream.stopReading() }
        }
        connection.stream.startReading()
        payload.withUnsafeBytes { connection.sender.write($0) }
        connection.test.run(until: "the first bytes were received") { !connection.events.received.isEmpty }
        XCTAssertEqual(connection.events.received.count, 1000, "one receive, then reading stopped")
        XCTAssertEqual(connection.events.receipts.last, .wouldBlock, "the receive after stopReading received nothing")
        connection.test.run(forMilliseconds: 100)
        XCTAssertEqual(connection.events.readinessReports, 1, "a stopped stream hears of no readiness")
        XCTAssertEqual(connection.events.received.count, 1000)
        connection.events.afterReceipt = nil
        connection.stream.startReading()
        connection.test.run(until: "the rest arrived") { connection.events.received.count == payload.count }
        XCTAssertTrue(connection.events.received == payload)
        connection.close()
    }

    func testAResetIsReceivedAsTheError() throws {
        let connection = try connect()
        connection.stream.startReading()
        connection.sender.write("some bytes, then a reset")
        connection.test.run(until: "the bytes were received") { connection.events.received.count == 24 }
        var linger = linger(l_onoff: 1, l_linger: 0)
        XCTAssertEqual(setsockopt(connection.sender.fileDescriptor, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<linger>.size)), 0)
        connection.sender.close()
        connection.test.run(until: "the reset was received") {
            connection.events.receipts.contains { if case .failed = $0 { true } else { false } }
        }
        XCTAssertEqual(connection.events.receipts.last, .failed(UVError(-ECONNRESET)))
        connection.close()
    }

    func testALingeringStreamDiscardsWhatArrivesWithoutReportingIt() throws {
        let connection = try connect()
        connection.stream.startReading()
        connection.stream.closeAfterWrites(lingerMilliseconds: 5000, stallMilliseconds: 5000)
        connection.sender.write("late bytes")
        connection.sender.closeAfterWrites()
        connection.test.run(until: "the lingering stream closed at the peer's end") { connection.events.isClosed }
        XCTAssertEqual(connection.events.readinessReports, 0)
        XCTAssertEqual(connection.events.delivered, 0)
        connection.close()
    }
}
