import ByteBuffers
import TLS
import XCTest

/// The engine's life cycle between a client and a server engine, with no socket: handshake,
/// data, ALPN, resumption, and how a stream ends.
final class TLSHandshakeTests: PKITestCase {
    private func configurations() throws -> (client: TLSConfiguration, server: TLSConfiguration) {
        let pki = try pki()
        return (try TLSConfiguration.client(caFile: pki.caCertificate),
                try TLSConfiguration.server(certificateFile: pki.localhost.certificate, keyFile: pki.localhost.key))
    }

    private func established() throws -> InMemoryConnection {
        let (client, server) = try configurations()
        let connection = InMemoryConnection(client: client, server: server)
        connection.pump()
        XCTAssertEqual(connection.client.state, .established)
        XCTAssertEqual(connection.server.state, .established)
        return connection
    }

    func testHandshakeFedOneByteAtATimeInBothDirectionsCompletes() throws {
        let (client, server) = try configurations()
        let connection = InMemoryConnection(client: client, server: server)
        XCTAssertEqual(connection.client.state, .handshaking)
        connection.pump(pieceSize: 1)
        XCTAssertEqual(connection.client.state, .established)
        XCTAssertEqual(connection.server.state, .established)
        XCTAssertEqual(connection.clientStatus, .wantsRead)
        XCTAssertEqual(connection.serverStatus, .wantsRead)
        XCTAssertGreaterThan(connection.feeds, 500, "the handshake went through in single bytes")
        XCTAssertEqual(connection.client.protocolVersion, "TLSv1.3")
    }

    func testApplicationDataFlowsBothWaysInLargeChunks() throws {
        let connection = try established()
        let request = testPattern(count: 6 << 20, seed: 1)
        let response = testPattern(count: 5 << 20, seed: 2)
        let chunk = 64 << 10
        for start in stride(from: 0, to: max(request.count, response.count), by: chunk) {
            if start < request.count {
                XCTAssertEqual(connection.client.write(Array(request[start..<min(start + chunk, request.count)])), .established)
            }
            if start < response.count {
                XCTAssertEqual(connection.server.write(Array(response[start..<min(start + chunk, response.count)])), .established)
            }
            // Pieces that cut records anywhere, as TCP may.
            connection.pump(pieceSize: 7919)
        }
        XCTAssertEqual(connection.serverStatus, .wantsRead)
        XCTAssertEqual(connection.clientStatus, .wantsRead)
        XCTAssertEqual(connection.serverReceived.count, request.count)
        XCTAssertEqual(connection.clientReceived.count, response.count)
        XCTAssertTrue(Array(connection.serverReceived.readableBytes) == request, "the server read what the client wrote")
        XCTAssertTrue(Array(connection.clientReceived.readableBytes) == response, "the client read what the server wrote")
    }

    func testSteadyTrafficSwapsBetweenTwoOutgoingBuffers() throws {
        let connection = try established()
        let message = testPattern(count: 4096, seed: 3)
        var outgoing = ByteBuffer()
        var storages = Set<UnsafeMutableRawPointer>()
        for _ in 0..<50 {
            connection.client.write(message)
            outgoing.clear()
            XCTAssertGreaterThan(connection.client.takeOutgoing(into: &outgoing), message.count)
            storages.insert(try XCTUnwrap(outgoing.baseAddress))
            connection.server.feed(UnsafeRawBufferPointer(outgoing.readableBytes))
            connection.serverReceived.clear()
            XCTAssertEqual(connection.server.read(into: &connection.serverReceived), .wantsRead)
            XCTAssertEqual(connection.serverReceived.count, message.count)
        }
        XCTAssertEqual(storages.count, 2, "the engine's buffer and the caller's trade places; nothing new is allocated")
    }

    func testPlaintextWrittenDuringTheHandshakeIsSentOnceItCompletes() throws {
        let (client, server) = try configurations()
        let connection = InMemoryConnection(client: client, server: server)
        XCTAssertEqual(connection.client.write(Array("GET / HTTP/1.1\r\n\r\n".utf8)), .handshaking)
        connection.pump()
        XCTAssertEqual(String(decoding: connection.serverReceived.readableBytes, as: UTF8.self), "GET / HTTP/1.1\r\n\r\n")
    }

    func testALPNNegotiatesHTTP11() throws {
        let connection = try established()
        XCTAssertEqual(connection.client.negotiatedProtocol, "http/1.1")
        XCTAssertEqual(connection.server.negotiatedProtocol, "http/1.1")
    }

    /// A Redis connection's configuration offers no ALPN: the server then selects none.
    func testAClientThatOffersNoHTTPGetsNoALPN() throws {
        let pki = try pki()
        let client = try TLSConfiguration.client(caFile: pki.caCertificate, offersHTTP11: false)
        let server = try TLSConfiguration.server(certificateFile: pki.localhost.certificate, keyFile: pki.localhost.key)
        let connection = InMemoryConnection(client: client, server: server)
        connection.pump()
        XCTAssertEqual(connection.client.state, .established)
        XCTAssertNil(connection.client.negotiatedProtocol)
        XCTAssertNil(connection.server.negotiatedProtocol)
    }

    func testCloseNotifyEndsTheStreamCleanly() throws {
        let connection = try established()
        connection.server.write(Array("last words".utf8))
        connection.server.close()
        XCTAssertEqual(connection.server.write(Array("more".utf8)), .closed, "no writes after close_notify")
        connection.pump()
        XCTAssertEqual(String(decoding: connection.clientReceived.readableBytes, as: UTF8.self), "last words")
        XCTAssertEqual(connection.clientStatus, .closed)
        XCTAssertEqual(connection.client.state, .closed)
        // The client answers with its own close_notify, which ends the server's side cleanly too.
        connection.client.close()
        XCTAssertTrue(connection.client.hasOutgoing)
        connection.pump()
        XCTAssertEqual(connection.serverStatus, .closed)
        // The socket closing after close_notify changes nothing.
        connection.client.feedEndOfStream()
        XCTAssertEqual(connection.client.read(into: &connection.clientReceived), .closed)
    }

    func testEndOfStreamWithoutCloseNotifyIsTruncation() throws {
        let connection = try established()
        connection.server.write(Array("partial body".utf8))
        connection.pump()
        XCTAssertEqual(String(decoding: connection.clientReceived.readableBytes, as: UTF8.self), "partial body")
        connection.client.feedEndOfStream()
        XCTAssertEqual(connection.client.read(into: &connection.clientReceived), .failed(.truncated))
        XCTAssertEqual(connection.client.state, .failed(.truncated))
    }

    func testEndOfStreamInsideARecordIsTruncation() throws {
        let connection = try established()
        connection.server.write(Array("a record cut in half".utf8))
        let record = InMemoryConnection.outgoing(of: connection.server)
        connection.client.feed(Array(record.prefix(record.count / 2)))
        XCTAssertEqual(connection.client.read(into: &connection.clientReceived), .wantsRead)
        connection.client.feedEndOfStream()
        XCTAssertEqual(connection.client.read(into: &connection.clientReceived), .failed(.truncated))
        XCTAssertEqual(connection.clientReceived.count, 0, "no plaintext from a record that never completed")
    }

    func testEndOfStreamAfterOwnCloseNotifyIsAnEnd() throws {
        let connection = try established()
        connection.client.close()
        connection.client.feedEndOfStream()
        XCTAssertEqual(connection.client.read(into: &connection.clientReceived), .closed)
    }

    func testEndOfStreamDuringTheHandshakeFailsIt() throws {
        let (client, server) = try configurations()
        let connection = InMemoryConnection(client: client, server: server)
        _ = InMemoryConnection.outgoing(of: connection.client)
        connection.client.feedEndOfStream()
        XCTAssertEqual(connection.client.read(into: &connection.clientReceived),
                       .failed(.handshakeFailed(reason: "the peer closed the connection during the handshake")))
    }

    func testSecondConnectionWithTheSameConfigurationResumesTheSession() throws {
        let (client, server) = try configurations()
        assertSecondConnectionResumes(client: client, server: server)
    }

    /// The connection made after a first one that `end` finished and that was then freed.
    private func connection(afterOneEndedBy end: (InMemoryConnection) -> Void) throws -> InMemoryConnection {
        let (client, server) = try configurations()
        do {
            let first = InMemoryConnection(client: client, server: server)
            first.pump()
            XCTAssertEqual(first.client.state, .established)
            end(first)
        }
        let next = InMemoryConnection(client: client, server: server)
        next.pump()
        XCTAssertEqual(next.client.state, .established)
        return next
    }

    func testSessionOfAHealthyConnectionDroppedWithoutCloseIsResumed() throws {
        let next = try connection(afterOneEndedBy: { _ in })
        XCTAssertTrue(next.client.sessionReused)
    }

    func testSessionOfATruncatedConnectionIsNotResumed() throws {
        let next = try connection(afterOneEndedBy: { cut in
            cut.client.feedEndOfStream()
            XCTAssertEqual(cut.client.read(into: &cut.clientReceived), .failed(.truncated))
        })
        XCTAssertFalse(next.client.sessionReused)
    }

    /// TLS 1.3: a connection that resumed the cached session (OpenSSL then counts its ticket as
    /// used) and has not yet received a ticket of its own leaves the session resumable for the
    /// next connection, as when a pool opens several at once.
    func testSessionStaysResumableWhileAConnectionThatResumedItAwaitsItsTicket() throws {
        let (client, server) = try configurations()
        InMemoryConnection(client: client, server: server).pump()
        let second = InMemoryConnection(client: client, server: server)
        second.server.feed(InMemoryConnection.outgoing(of: second.client))
        XCTAssertEqual(second.server.read(into: &second.serverReceived), .handshaking)
        second.client.feed(InMemoryConnection.outgoing(of: second.server))
        XCTAssertEqual(second.client.read(into: &second.clientReceived), .wantsRead)
        XCTAssertTrue(second.client.sessionReused)
        let third = InMemoryConnection(client: client, server: server)
        third.pump()
        XCTAssertEqual(third.client.state, .established)
        XCTAssertTrue(third.client.sessionReused)
        second.pump()
        XCTAssertEqual(second.server.state, .established)
    }

    func testSessionsAreNotSharedBetweenHosts() throws {
        let (client, server) = try configurations()
        InMemoryConnection(client: client, server: server, host: "localhost").pump()
        let other = InMemoryConnection(client: client, server: server, host: "127.0.0.1")
        other.pump()
        XCTAssertEqual(other.client.state, .established)
        XCTAssertFalse(other.client.sessionReused)
    }

    func testPlainHTTPIsAHandshakeFailure() throws {
        let (_, server) = try configurations()
        let engine = TLSEngine(server: server)
        var plaintext = ByteBuffer()
        engine.feed(Array("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8))
        guard case .failed(.handshakeFailed(let reason)) = engine.read(into: &plaintext) else {
            return XCTFail("expected a handshake failure, got \(engine.state)")
        }
        XCTAssertEqual(reason, "http request")
    }

    func testTamperedRecordIsAProtocolError() throws {
        let connection = try established()
        connection.server.write(Array("authentic".utf8))
        var record = InMemoryConnection.outgoing(of: connection.server)
        record[record.count - 1] ^= 0x01
        connection.client.feed(record)
        guard case .failed(.protocolError(let reason)) = connection.client.read(into: &connection.clientReceived) else {
            return XCTFail("expected a protocol error, got \(connection.client.state)")
        }
        XCTAssertEqual(reason, "decryption failed or bad record mac")
        XCTAssertEqual(connection.clientReceived.count, 0)
    }
}
