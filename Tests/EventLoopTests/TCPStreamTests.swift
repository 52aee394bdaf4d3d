@testable import EventLoop
import LoopTestSupport
import XCTest

/// A leak-checked loop with one loopback connection on it: a client, and the stream the
/// server accepted for it, each with the recorder that is its delegate.
private final class LoopbackConnection {
    let test: LeakCheckedLoop
    let listener: TCPListener
    let client: TCPStream
    let clientEvents: StreamRecorder
    let server: TCPStream
    let serverEvents: StreamRecorder

    /// Larger than what the kernel buffers for a loopback peer that reads nothing (about
    /// 4 MiB of send buffer and a 128 KiB receive window here), so most of it has to queue.
    static let farAboveHighWater = 8 << 20

    /// Connects and waits until the connect finished and the server accepted. The server reads
    /// from the start when `serverReads`, and calls `serverOnRead` from its read callback.
    init(serverReads: Bool = true, serverOnRead: ((any ByteStream, UnsafeRawBufferPointer) -> Void)? = nil,
         keepAlive: TCPKeepAlive? = nil, file: StaticString = #filePath, line: UInt = #line) throws {
        test = try LeakCheckedLoop()
        let listening = try LoopbackServer(on: test.loop, startReading: serverReads, onRead: serverOnRead)
        listener = listening.listener
        let events = StreamRecorder()
        client = try TCPStream.connect(on: test.loop, to: listening.address, keepAlive: keepAlive, delegate: events)
        test.run(until: "the client connected and the server accepted", file: file, line: line) {
            events.connectResult != nil && !listening.accepted.isEmpty
        }
        XCTAssertEqual(events.connectResult, .some(nil), "connect failed", file: file, line: line)
        clientEvents = events
        (server, serverEvents) = try XCTUnwrap(listening.accepted.first, file: file, line: line)
    }

    /// Writes `farAboveHighWater` bytes from `stream` (the client unless given) and returns them.
    func writeFarAboveHighWater(from stream: TCPStream? = nil) -> [UInt8] {
        let payload = patternBytes(Self.farAboveHighWater)
        payload.withUnsafeBytes { (stream ?? client).write($0) }
        return payload
    }

    /// Closes both ends and the listener, waits for their close callbacks and checks for leaks.
    func closeAndCheckForLeaks(file: StaticString = #filePath, line: UInt = #line) {
        client.close()
        server.close()
        listener.close()
        test.run(until: "both ends closed", file: file, line: line) { clientEvents.isClosed && serverEvents.isClosed }
        test.closeAndCheckForLeaks(file: file, line: line)
    }
}

final class TCPStreamTests: XCTestCase {
    /// Every client connection holds an accepted stream: it stays in malloc's 160-byte size class
    /// (issue 25: memory per idle connection).
    func testAnAcceptedStreamTakesAtMost160BytesOfHeap() throws {
        let connection = try LoopbackConnection()
        XCTAssertLessThanOrEqual(heapBytes(of: connection.server), 160)
        connection.closeAndCheckForLeaks()
    }

    func testStreamsExchangeBytesBothWaysAndBothClose() throws {
        // The server echoes from inside its read callback.
        let connection = try LoopbackConnection { stream, bytes in stream.write(bytes) }
        connection.client.startReading()
        connection.client.write("ping")
        connection.test.run(until: "the echo arrived") { connection.clientEvents.receivedText == "ping" }
        XCTAssertEqual(connection.serverEvents.receivedText, "ping")

        connection.client.close()
        connection.test.run(until: "the server saw the client's FIN") { connection.serverEvents.endResult != nil }
        XCTAssertEqual(connection.serverEvents.endResult, .some(nil))
        connection.closeAndCheckForLeaks()
    }

    func testWriteFarAboveTheHighWaterMarkDrainsExactlyOnceWhenThePeerReads() throws {
        let connection = try LoopbackConnection(serverReads: false)
        let payload = connection.writeFarAboveHighWater()
        XCTAssertTrue(connection.client.isAboveHighWater, "queued \(connection.client.queuedBytes) bytes")
        connection.test.run(forMilliseconds: 100)
        XCTAssertEqual(connection.clientEvents.drainCount, 0, "drained while the peer read nothing")

        connection.server.startReading()
        connection.test.run(until: "the server read the whole payload", seconds: 30) {
            connection.serverEvents.received.count >= payload.count
        }
        XCTAssertEqual(connection.clientEvents.drainCount, 1)
        XCTAssertFalse(connection.client.isAboveHighWater)
        XCTAssertTrue(connection.serverEvents.received(payload), "the bytes that arrived differ from those written")
        connection.closeAndCheckForLeaks()
    }

    /// Written bytes wait in storage borrowed from the loop only until they are out: an idle
    /// stream holds no write buffer and no write request.
    func testStreamHoldsNoWriteMemoryOnceItsBytesAreOut() throws {
        let connection = try LoopbackConnection(serverReads: false)
        let payload = connection.writeFarAboveHighWater()
        XCTAssertGreaterThan(connection.client.heldWriteMemory, 0, "nothing was left queued to test with")

        connection.server.startReading()
        connection.test.run(until: "the server read the whole payload", seconds: 30) {
            connection.serverEvents.received.count >= payload.count
        }
        connection.test.run(until: "the write callback ran") { connection.client.queuedBytes == 0 }
        XCTAssertEqual(connection.client.heldWriteMemory, 0)
        connection.closeAndCheckForLeaks()
    }

    /// Writes made during a read callback are gathered in borrowed storage and sent when it
    /// returns; the storage goes back to the loop's pool.
    func testBatchedWritesReturnTheirStorageToTheLoop() throws {
        let connection = try LoopbackConnection { stream, bytes in
            stream.write(bytes)
            stream.write(bytes)
        }
        connection.client.startReading()
        connection.client.write("ping")
        connection.test.run(until: "the echo arrived") { connection.clientEvents.receivedText == "pingping" }
        XCTAssertEqual(connection.server.heldWriteMemory, 0)
        XCTAssertEqual(connection.test.loop.buffers.spareCount, 1)
        connection.closeAndCheckForLeaks()
    }

    /// A body-sized write during a read callback goes to the kernel at once, with the framing
    /// gathered before it and not copied into the batch; what follows it is still batched, and
    /// the peer gets every byte in the order written.
    func testLargeWriteInAReadCallbackGoesOutAtOnceWithWhatWasGatheredBeforeIt() throws {
        let body = patternBytes(TCPStream.uncopiedWriteMinimum * 2)
        var queuedAfterBody = -1
        let connection = try LoopbackConnection { stream, _ in
            Array("8000\r\n".utf8).withUnsafeBytes { stream.write($0) }
            body.withUnsafeBytes { stream.write($0) }
            queuedAfterBody = stream.queuedBytes
            Array("\r\n".utf8).withUnsafeBytes { stream.write($0) }
        }
        connection.client.startReading()
        connection.client.write("ping")
        let expected = Array("8000\r\n".utf8) + body + Array("\r\n".utf8)
        connection.test.run(until: "the framed body arrived") { connection.clientEvents.received.count >= expected.count }
        XCTAssertTrue(connection.clientEvents.received(expected), "the bytes that arrived differ from those written")
        XCTAssertLessThan(queuedAfterBody, 6 + body.count, "the body was copied into the batch instead of written")
        XCTAssertEqual(connection.server.heldWriteMemory, 0)
        connection.closeAndCheckForLeaks()
    }

    func testCloseAfterWritesDeliversEveryQueuedByteBeforeTheFIN() throws {
        let connection = try LoopbackConnection(serverReads: false)
        let payload = connection.writeFarAboveHighWater()
        XCTAssertGreaterThan(connection.client.queuedBytes, 0, "nothing was left queued to test with")
        connection.client.closeAfterWrites()

        connection.server.startReading()
        connection.test.run(until: "the server saw the FIN", seconds: 30) { connection.serverEvents.endResult != nil }
        XCTAssertEqual(connection.serverEvents.endResult, .some(nil))
        XCTAssertEqual(connection.serverEvents.receivedAtEnd, payload.count)
        XCTAssertTrue(connection.serverEvents.received(payload), "the bytes that arrived differ from those written")
        connection.closeAndCheckForLeaks()
    }

    func testLingerTimeCountsFromTheFINNotFromCloseAfterWrites() throws {
        let connection = try LoopbackConnection(serverReads: false)
        let payload = connection.writeFarAboveHighWater()
        connection.client.closeAfterWrites(lingerMilliseconds: 100)

        // The peer reads only after the linger time: nothing queued may be dropped meanwhile.
        connection.test.run(forMilliseconds: 300)
        connection.server.startReading()
        connection.test.run(until: "the server saw the FIN", seconds: 30) { connection.serverEvents.endResult != nil }
        XCTAssertEqual(connection.serverEvents.receivedAtEnd, payload.count)
        connection.closeAndCheckForLeaks()
    }

    func testLingeringStreamClosesItselfWhenThePeerCloses() throws {
        let connection = try LoopbackConnection()
        connection.client.write("last words")
        connection.client.closeAfterWrites()
        connection.test.run(until: "the server saw the FIN") { connection.serverEvents.endResult != nil }
        XCTAssertEqual(connection.serverEvents.receivedText, "last words")

        connection.server.close()
        connection.test.run(until: "the client closed itself") { connection.clientEvents.isClosed }
        XCTAssertTrue(connection.client.isClosed)
        connection.closeAndCheckForLeaks()
    }

    // MARK: Closing unless the peer sends

    /// The peer sent nothing: the stream closes as soon as its writes are out, not after the
    /// peer's FIN or the linger, and the peer still gets every byte, then a clean end.
    func testCloseUnlessPeerSendsClosesOnceWrittenWhenThePeerSentNothing() throws {
        let connection = try LoopbackConnection()
        let payload = connection.writeFarAboveHighWater(from: connection.server)
        connection.server.closeAfterWritesUnlessPeerSends()
        XCTAssertFalse(connection.server.isClosed, "closed with \(connection.server.queuedBytes) bytes queued")
        connection.client.startReading()
        connection.test.run(until: "the client read to the end", seconds: 30) { connection.clientEvents.endResult != nil }
        XCTAssertEqual(connection.clientEvents.endResult, .some(nil), "a clean end, not a reset")
        XCTAssertTrue(connection.clientEvents.received(payload), "the bytes that arrived differ from those written")
        XCTAssertTrue(connection.server.isClosed, "the server lingers after its FIN")
        connection.closeAndCheckForLeaks()
    }

    /// The peer's bytes wait unread (a next request): the stream sends its FIN and lingers,
    /// reading and discarding them, until the peer ends too.
    func testCloseUnlessPeerSendsLingersWhenThePeersBytesWaitUnread() throws {
        let connection = try LoopbackConnection(serverReads: false)
        let fd = try XCTUnwrap(connection.server.socketDescriptor)
        connection.client.write("GET /next HTTP/1.1\r\n\r\n")
        connection.test.run(until: "the peer's bytes arrived") { unreadBytes(fd) > 0 }
        connection.server.write("the response")
        connection.server.closeAfterWritesUnlessPeerSends()
        connection.client.startReading()
        connection.test.run(until: "the client saw the FIN") { connection.clientEvents.endResult != nil }
        XCTAssertEqual(connection.clientEvents.receivedText, "the response")
        XCTAssertFalse(connection.server.isClosed, "closed with the peer's bytes unread: the kernel would reset")
        connection.test.run(until: "the lingering server read the peer's bytes") { unreadBytes(fd) == 0 }
        XCTAssertEqual(connection.serverEvents.receivedText, "", "what a lingering stream reads is not delivered")

        connection.client.close()
        connection.test.run(until: "the server closed at the client's end") { connection.serverEvents.isClosed }
        connection.closeAndCheckForLeaks()
    }

    /// The peer sends while the writes are still queued: the stream reads and discards it, and
    /// lingers after its FIN instead of closing at once.
    func testCloseUnlessPeerSendsLingersWhenThePeerSendsWhileTheWritesFlush() throws {
        let connection = try LoopbackConnection()
        let payload = connection.writeFarAboveHighWater(from: connection.server)
        connection.server.closeAfterWritesUnlessPeerSends()
        XCTAssertGreaterThan(connection.server.queuedBytes, 0)
        try sendAndWaitUntilRead("more", from: connection.client, to: connection.server, on: connection.test)
        XCTAssertGreaterThan(connection.server.queuedBytes, 0, "the writes flushed before the peer's bytes came")

        connection.client.startReading()
        connection.test.run(until: "the client read to the end", seconds: 30) { connection.clientEvents.endResult != nil }
        XCTAssertTrue(connection.clientEvents.received(payload), "the bytes that arrived differ from those written")
        XCTAssertFalse(connection.server.isClosed, "closed at once although the peer sent more")
        connection.client.close()
        connection.test.run(until: "the server closed at the client's end") { connection.serverEvents.isClosed }
        connection.closeAndCheckForLeaks()
    }

    /// The peer ends its side while the response is still queued (a client may half-close
    /// after its request): a closing stream sends all of it before it closes, lingering or not.
    func testAClosingStreamSendsWhatIsQueuedAfterThePeersFIN() throws {
        for lingers in [true, false] {
            let connection = try LoopbackConnection()
            let payload = connection.writeFarAboveHighWater(from: connection.server)
            if lingers { connection.server.closeAfterWrites() } else { connection.server.closeAfterWritesUnlessPeerSends() }
            connection.client.finishWriting()
            connection.test.run(until: "the server read the client's FIN") { !connection.server.isReading || connection.server.isClosed }
            connection.client.startReading()
            connection.test.run(until: "the client read to the end", seconds: 30) { connection.clientEvents.endResult != nil }
            XCTAssertEqual(connection.clientEvents.endResult, .some(nil), "lingers: \(lingers)")
            XCTAssertTrue(connection.clientEvents.received(payload),
                          "lingers: \(lingers): \(connection.clientEvents.received.count) of \(payload.count) bytes arrived")
            connection.test.run(until: "the server closed") { connection.serverEvents.isClosed }
            connection.closeAndCheckForLeaks()
        }
    }

    /// The socket's keepalive options as the kernel holds them: on, idle, interval, probes.
    private func keepAliveOptions(_ stream: TCPStream) throws -> [Int32] {
        let fd = try XCTUnwrap(stream.socketDescriptor)
        return [(SOL_SOCKET, SO_KEEPALIVE), (Int32(IPPROTO_TCP), TCP_KEEPIDLE), (Int32(IPPROTO_TCP), TCP_KEEPINTVL),
                (Int32(IPPROTO_TCP), TCP_KEEPCNT)].map { level, option in
            var value: Int32 = -1
            var size = socklen_t(MemoryLayout<Int32>.size)
            XCTAssertEqual(getsockopt(fd, level, option, &value, &size), 0)
            return value
        }
    }

    func testKeepAliveIsSetOnlyWhenAsked() throws {
        let probing = try LoopbackConnection(keepAlive: TCPKeepAlive(idleSeconds: 30, intervalSeconds: 10, probes: 3))
        XCTAssertEqual(try keepAliveOptions(probing.client), [1, 30, 10, 3])
        XCTAssertEqual(try keepAliveOptions(probing.server).first, 0)
        probing.closeAndCheckForLeaks()
        let plain = try LoopbackConnection()
        XCTAssertEqual(try keepAliveOptions(plain.client).first, 0)
        plain.closeAndCheckForLeaks()
    }

    func testConnectToAClosedPortReportsConnectionRefused() throws {
        let test = try LeakCheckedLoop()
        let server = try LoopbackServer(on: test.loop)
        server.listener.close()
        test.loop.runOnce(wait: false)

        let events = StreamRecorder()
        let client = try TCPStream.connect(on: test.loop, to: server.address, delegate: events)
        test.run(until: "the connect finished") { events.connectResult != nil }
        XCTAssertEqual(events.connectResult??.isConnectionRefused, true, "\(String(describing: events.connectResult))")
        client.close()
        test.run(until: "the client closed") { events.isClosed }
        test.closeAndCheckForLeaks()
    }

    /// `finishWriting` on a stream still connecting, with nothing written (no write completion
    /// to send it after): the FIN goes once it is connected.
    func testFinishWritingBeforeTheConnectCompletesSendsTheFINOnceConnected() throws {
        let test = try LeakCheckedLoop()
        let server = try LoopbackServer(on: test.loop)
        let events = StreamRecorder()
        let client = try TCPStream.connect(on: test.loop, to: server.address, delegate: events)
        client.finishWriting()
        test.run(until: "the server saw the FIN") { server.accepted.first?.recorder.endResult != nil }
        let (accepted, recorder) = try XCTUnwrap(server.accepted.first)
        XCTAssertEqual(recorder.endResult, .some(nil))
        XCTAssertEqual(recorder.receivedText, "")
        client.close()
        accepted.close()
        server.listener.close()
        test.run(until: "both ends closed") { events.isClosed && recorder.isClosed }
        test.closeAndCheckForLeaks()
    }

    /// What is written after `finishWriting` is dropped: the peer gets the bytes before it,
    /// then the FIN, nothing after.
    func testWritesAfterFinishWritingAreRefused() throws {
        let connection = try LoopbackConnection()
        connection.client.write("before")
        connection.client.finishWriting()
        connection.client.write("after")
        XCTAssertEqual(connection.client.queuedBytes, 0)
        XCTAssertFalse(connection.client.isClosed, "a write after the FIN broke the stream")
        connection.test.run(until: "the server saw the FIN") { connection.serverEvents.endResult != nil }
        XCTAssertEqual(connection.serverEvents.receivedText, "before")
        // Half-closed: the client still reads what the server sends.
        connection.client.startReading()
        connection.server.write("reply")
        connection.test.run(until: "the reply arrived") { connection.clientEvents.receivedText == "reply" || connection.clientEvents.isClosed }
        XCTAssertEqual(connection.clientEvents.receivedText, "reply")
        connection.closeAndCheckForLeaks()
    }
}
