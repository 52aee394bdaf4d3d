import ByteBuffers
import TLS
import XCTest

/// `read(fed:into:_:)`, the engine's read for a transport's read callback: OpenSSL reads the
/// ciphertext where it lies (nothing is copied to keep unless OpenSSL left it unread), and the
/// records of one read reach the consumer in one piece per `space`.
final class TLSLentReadTests: PKITestCase {
    private func established(lendsCiphertext: Bool = true) throws -> InMemoryConnection {
        let pki = try pki()
        let connection = InMemoryConnection(
            client: try TLSConfiguration.client(caFile: pki.caCertificate),
            server: try TLSConfiguration.server(certificateFile: pki.localhost.certificate, keyFile: pki.localhost.key),
            lendsCiphertext: lendsCiphertext)
        connection.pump()
        XCTAssertEqual(connection.client.state, .established)
        XCTAssertEqual(connection.server.state, .established)
        return connection
    }

    /// What `engine` hands on, piece by piece, when `ciphertext` is one read of the transport.
    private func read(_ ciphertext: [UInt8], by engine: TLSEngine) -> (pieces: [[UInt8]], status: TLSStatus) {
        var pieces: [[UInt8]] = []
        let status = ciphertext.withUnsafeBytes { bytes in
            InMemoryConnection.withPlaintextSpace { space in
                engine.read(fed: bytes, into: space) { pieces.append(Array($0)) }
            }
        }
        return (pieces, status)
    }

    func testHandshakeLentOneByteAtATimeCompletes() throws {
        let pki = try pki()
        let connection = InMemoryConnection(
            client: try TLSConfiguration.client(caFile: pki.caCertificate),
            server: try TLSConfiguration.server(certificateFile: pki.localhost.certificate, keyFile: pki.localhost.key),
            lendsCiphertext: true)
        connection.pump(pieceSize: 1)
        XCTAssertEqual(connection.client.state, .established)
        XCTAssertEqual(connection.server.state, .established)
        XCTAssertEqual(connection.clientStatus, .wantsRead)
    }

    func testRecordsOfOneReadAreHandedOnTogetherUpToTheSpace() throws {
        let connection = try established()
        let body = testPattern(count: 80 << 10, seed: 11)
        connection.server.write(body)
        let (pieces, status) = read(InMemoryConnection.outgoing(of: connection.server), by: connection.client)
        XCTAssertEqual(status, .wantsRead)
        XCTAssertEqual(pieces.map(\.count), [64 << 10, 16 << 10], "five 16 KiB records: four fill the space, one follows")
        XCTAssertTrue(pieces.flatMap { $0 } == body)
    }

    func testDataLentInPiecesThatCutRecordsAnywhereArrivesWhole() throws {
        let connection = try established()
        let body = testPattern(count: 70 << 10, seed: 12)
        for pieceSize in [7919, 1, 65536, 16406] {
            connection.clientReceived.clear()
            connection.server.write(body)
            connection.pump(pieceSize: pieceSize)
            XCTAssertEqual(connection.clientStatus, .wantsRead)
            XCTAssertTrue(Array(connection.clientReceived.readableBytes) == body, "pieces of \(pieceSize) bytes")
        }
    }

    func testWholeRecordsLentLeaveNoCiphertextBehind() throws {
        let connection = try established()
        connection.server.write(testPattern(count: 40 << 10, seed: 13))
        let ciphertext = InMemoryConnection.outgoing(of: connection.server)
        _ = read(ciphertext, by: connection.client)
        XCTAssertEqual(connection.client.heldCiphertextCapacity, 0, "OpenSSL read every lent byte in place: nothing was copied to keep")
    }

    func testARecordCutBetweenTwoReadsArrivesWholeWithNothingCopiedToKeep() throws {
        let connection = try established()
        let body = testPattern(count: 20 << 10, seed: 14)
        connection.server.write(body)
        let ciphertext = InMemoryConnection.outgoing(of: connection.server)
        let cut = ciphertext.count - 1000
        let first = read(Array(ciphertext[..<cut]), by: connection.client)
        XCTAssertEqual(first.status, .wantsRead)
        XCTAssertEqual(first.pieces.map(\.count), [16 << 10], "the first record; the second is incomplete")
        XCTAssertEqual(connection.client.heldCiphertextCapacity, 0, "OpenSSL keeps the second record's start itself")
        let second = read(Array(ciphertext[cut...]), by: connection.client)
        XCTAssertEqual(second.status, .wantsRead)
        XCTAssertTrue((first.pieces + second.pieces).flatMap { $0 } == body)
    }

    func testCloseNotifyReadWithDataTakesEffectAfterTheDataIsHandedOn() throws {
        let connection = try established()
        connection.server.write(Array("last words".utf8))
        connection.server.close()
        var statesWhileHandedOn: [TLSStatus] = []
        var text = ""
        let status = InMemoryConnection.outgoing(of: connection.server).withUnsafeBytes { bytes in
            InMemoryConnection.withPlaintextSpace { space in
                connection.client.read(fed: bytes, into: space) {
                    statesWhileHandedOn.append(connection.client.state)
                    text += String(decoding: $0, as: UTF8.self)
                }
            }
        }
        XCTAssertEqual(text, "last words")
        XCTAssertEqual(statesWhileHandedOn, [.established], "the consumer sees the stream open while its last bytes arrive")
        XCTAssertEqual(status, .closed)
    }

    func testTamperedRecordAfterGoodOnesFailsOnceTheyAreHandedOn() throws {
        let connection = try established()
        connection.server.write(Array("authentic".utf8))
        let good = InMemoryConnection.outgoing(of: connection.server)
        connection.server.write(Array("forged".utf8))
        var bad = InMemoryConnection.outgoing(of: connection.server)
        bad[bad.count - 1] ^= 0x01
        let (pieces, status) = read(good + bad, by: connection.client)
        XCTAssertEqual(pieces.map { String(decoding: $0, as: UTF8.self) }, ["authentic"])
        XCTAssertEqual(status, .failed(.protocolError(reason: "decryption failed or bad record mac")))
    }

    func testEndOfStreamInsideALentRecordIsTruncation() throws {
        let connection = try established()
        connection.server.write(Array("a record cut in half".utf8))
        let record = InMemoryConnection.outgoing(of: connection.server)
        XCTAssertEqual(read(Array(record.prefix(record.count / 2)), by: connection.client).status, .wantsRead)
        connection.client.feedEndOfStream()
        let (pieces, status) = read([], by: connection.client)
        XCTAssertEqual(status, .failed(.truncated))
        XCTAssertEqual(pieces.count, 0, "no plaintext from a record that never completed")
    }
}
