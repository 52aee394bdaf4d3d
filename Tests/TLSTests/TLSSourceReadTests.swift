import ByteBuffers
import TLS
import XCTest

/// A transport OpenSSL receives from itself, over ciphertext held in memory: each receive takes
/// as much as asked of what `available` allows (a socket with that much in its buffer).
private final class HeldCiphertext: CiphertextSource {
    var bytes: [UInt8] = []
    /// How many bytes may be received now, at most; the rest waits (not yet arrived).
    var available = Int.max
    /// What each receive was asked for, and what it gave.
    var receives: [(asked: Int, given: Int)] = []

    func receiveCiphertext(into space: UnsafeMutableRawBufferPointer) -> Int {
        let count = min(space.count, bytes.count, available)
        bytes.withUnsafeBytes { space.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0.prefix(count))) }
        bytes.removeFirst(count)
        available -= count
        receives.append((space.count, count))
        return count
    }
}

/// `read(from:into:_:)`: OpenSSL receives the ciphertext from the transport itself, into its
/// own record buffer, until the transport has nothing more.
final class TLSSourceReadTests: PKITestCase {
    private func established() throws -> InMemoryConnection {
        let pki = try pki()
        let connection = InMemoryConnection(
            client: try TLSConfiguration.client(caFile: pki.caCertificate),
            server: try TLSConfiguration.server(certificateFile: pki.localhost.certificate, keyFile: pki.localhost.key))
        connection.pump()
        XCTAssertEqual(connection.client.state, .established)
        return connection
    }

    /// What `engine` hands on, piece by piece, receiving from `source`.
    private func read(from source: HeldCiphertext, by engine: TLSEngine) -> (pieces: [[UInt8]], status: TLSStatus) {
        var pieces: [[UInt8]] = []
        let status = InMemoryConnection.withPlaintextSpace { space in
            engine.read(from: source, into: space) { pieces.append(Array($0)) }
        }
        return (pieces, status)
    }

    func testABodyIsReceivedAboutARecordAtATimeAndHandedOnInSpaceSizedPieces() throws {
        let connection = try established()
        let body = testPattern(count: 80 << 10, seed: 21)
        connection.server.write(body)
        let source = HeldCiphertext()
        source.bytes = InMemoryConnection.outgoing(of: connection.server)
        let (pieces, status) = read(from: source, by: connection.client)
        XCTAssertEqual(status, .wantsRead)
        XCTAssertEqual(pieces.map(\.count), [64 << 10, 16 << 10])
        XCTAssertTrue(pieces.flatMap { $0 } == body)
        XCTAssertTrue(source.bytes.isEmpty)
        // Read-ahead: a receive asks for what OpenSSL's record buffer holds, not a 5-byte header
        // then the record: five records take about five receives, and a last empty one.
        XCTAssertLessThanOrEqual(source.receives.count, 7, "\(source.receives)")
        XCTAssertGreaterThan(source.receives.map(\.asked).min() ?? 0, 5 + 16 << 10 / 2, "\(source.receives)")
    }

    func testReceivesStopWhenTheSourceHasNothingAndResumeAtTheNextRead() throws {
        let connection = try established()
        let body = testPattern(count: 40 << 10, seed: 22)
        connection.server.write(body)
        let source = HeldCiphertext()
        source.bytes = InMemoryConnection.outgoing(of: connection.server)
        source.available = 20 << 10
        let first = read(from: source, by: connection.client)
        XCTAssertEqual(first.status, .wantsRead)
        XCTAssertEqual(first.pieces.map(\.count), [16 << 10], "the one record received whole")
        let last = try XCTUnwrap(source.receives.last)
        XCTAssertLessThan(last.given, last.asked, "no receive after one the source could not fill: \(source.receives)")
        let receivesBefore = source.receives.count
        source.available = .max
        let second = read(from: source, by: connection.client)
        XCTAssertEqual(second.status, .wantsRead)
        XCTAssertTrue((first.pieces + second.pieces).flatMap { $0 } == body)
        XCTAssertGreaterThan(source.receives.count, receivesBefore)
    }

    func testASmallResponseTakesOneReceive() throws {
        let connection = try established()
        connection.server.write(Array("HTTP/1.1 204 No Content\r\n\r\n".utf8))
        let source = HeldCiphertext()
        source.bytes = InMemoryConnection.outgoing(of: connection.server)
        let (pieces, status) = read(from: source, by: connection.client)
        XCTAssertEqual(status, .wantsRead)
        XCTAssertEqual(pieces.map { String(decoding: $0, as: UTF8.self) }, ["HTTP/1.1 204 No Content\r\n\r\n"])
        XCTAssertEqual(source.receives.count, 1, "a receive the source could not fill ends the reading")
    }

    func testEndOfStreamInsideAReceivedRecordIsTruncation() throws {
        let connection = try established()
        connection.server.write(Array("a record cut in half".utf8))
        let record = InMemoryConnection.outgoing(of: connection.server)
        let source = HeldCiphertext()
        source.bytes = Array(record.prefix(record.count / 2))
        XCTAssertEqual(read(from: source, by: connection.client).status, .wantsRead)
        // The transport's owner met the end in a receive, and says so.
        connection.client.feedEndOfStream()
        var plaintext = ByteBuffer()
        XCTAssertEqual(connection.client.read(into: &plaintext), .failed(.truncated))
        XCTAssertEqual(plaintext.count, 0, "no plaintext from a record that never completed")
    }

    func testEndOfStreamAfterWholeRecordsWithoutCloseNotifyIsTruncation() throws {
        let connection = try established()
        connection.server.write(Array("complete, but no close_notify".utf8))
        let source = HeldCiphertext()
        source.bytes = InMemoryConnection.outgoing(of: connection.server)
        let (pieces, status) = read(from: source, by: connection.client)
        XCTAssertEqual(status, .wantsRead)
        XCTAssertEqual(pieces.count, 1)
        connection.client.feedEndOfStream()
        var plaintext = ByteBuffer()
        XCTAssertEqual(connection.client.read(into: &plaintext), .failed(.truncated))
    }

    func testCloseNotifyReceivedWithDataEndsCleanlyAfterTheData() throws {
        let connection = try established()
        connection.server.write(Array("last words".utf8))
        connection.server.close()
        let source = HeldCiphertext()
        source.bytes = InMemoryConnection.outgoing(of: connection.server)
        let (pieces, status) = read(from: source, by: connection.client)
        XCTAssertEqual(pieces.map { String(decoding: $0, as: UTF8.self) }, ["last words"])
        XCTAssertEqual(status, .closed)
    }

    func testTheHandshakeCompletesOverASource() throws {
        let pki = try pki()
        let client = TLSEngine(client: try TLSConfiguration.client(caFile: pki.caCertificate), host: "localhost")
        let server = TLSEngine(server: try TLSConfiguration.server(certificateFile: pki.localhost.certificate, keyFile: pki.localhost.key))
        let toServer = HeldCiphertext()
        let toClient = HeldCiphertext()
        var status = (client: TLSStatus.handshaking, server: TLSStatus.handshaking)
        for _ in 0..<4 {
            toServer.bytes += InMemoryConnection.outgoing(of: client)
            status.server = read(from: toServer, by: server).status
            toClient.bytes += InMemoryConnection.outgoing(of: server)
            status.client = read(from: toClient, by: client).status
        }
        XCTAssertEqual(client.state, .established)
        XCTAssertEqual(server.state, .established)
        XCTAssertEqual(status.client, .wantsRead)
    }
}
