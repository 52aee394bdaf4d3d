import ByteBuffers
import TLS
import XCTest

/// A client engine and a server engine wired to each other in memory: `pump` plays the
/// transport, moving each side's outgoing ciphertext to the other and reading after every
/// piece, as a libuv read callback would.
final class InMemoryConnection {
    let client: TLSEngine
    let server: TLSEngine
    /// Plaintext each side has read so far.
    var clientReceived = ByteBuffer()
    var serverReceived = ByteBuffer()
    /// What each side's last `read(into:)` returned.
    private(set) var clientStatus: TLSStatus = .handshaking
    private(set) var serverStatus: TLSStatus = .handshaking
    /// How many separate pieces of ciphertext have been fed, both ways.
    private(set) var feeds = 0
    /// Pieces go to `read(fed:into:_:)` (as TLSStream's reads do), not to `feed` then `read(into:)`.
    private let lendsCiphertext: Bool

    init(client: TLSConfiguration, server: TLSConfiguration, host: String = "localhost", lendsCiphertext: Bool = false) {
        self.client = TLSEngine(client: client, host: host)
        self.server = TLSEngine(server: server)
        self.lendsCiphertext = lendsCiphertext
    }

    /// Moves ciphertext both ways until neither side has anything to send, in pieces of at most
    /// `pieceSize` bytes (1: byte by byte).
    func pump(pieceSize: Int = .max) {
        var moved = true
        while moved {
            let toServer = transfer(from: client, to: server, into: &serverReceived, pieceSize: pieceSize)
            if let status = toServer.status { serverStatus = status }
            let toClient = transfer(from: server, to: client, into: &clientReceived, pieceSize: pieceSize)
            if let status = toClient.status { clientStatus = status }
            moved = toServer.moved || toClient.moved
        }
    }

    /// A TCP read's worth of space for plaintext, as TLSStream gives the engine.
    static func withPlaintextSpace<Result>(_ body: (UnsafeMutableRawBufferPointer) -> Result) -> Result {
        let space = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 << 10, alignment: 16)
        defer { space.deallocate() }
        return body(space)
    }

    /// Ciphertext `from` would send now, taken out of it.
    static func outgoing(of engine: TLSEngine) -> [UInt8] {
        var buffer = ByteBuffer()
        engine.takeOutgoing(into: &buffer)
        return Array(buffer.readableBytes)
    }

    private func transfer(from sender: TLSEngine, to receiver: TLSEngine, into plaintext: inout ByteBuffer,
                          pieceSize: Int) -> (moved: Bool, status: TLSStatus?) {
        let bytes = Self.outgoing(of: sender)
        var status: TLSStatus?
        var start = 0
        while start < bytes.count {
            let end = start + min(pieceSize, bytes.count - start)
            if lendsCiphertext {
                status = bytes[start..<end].withUnsafeBytes { piece in
                    Self.withPlaintextSpace { space in receiver.read(fed: piece, into: space) { plaintext.append($0) } }
                }
            } else {
                receiver.feed(Array(bytes[start..<end]))
                status = receiver.read(into: &plaintext)
            }
            feeds += 1
            start = end
        }
        return (!bytes.isEmpty, status)
    }
}

/// `count` bytes that do not repeat with any small period, so that a lost, doubled or
/// reordered piece shows.
func testPattern(count: Int, seed: UInt32) -> [UInt8] {
    var state = seed | 1
    return (0..<count).map { _ in
        state ^= state << 13
        state ^= state >> 17
        state ^= state << 5
        return UInt8(truncatingIfNeeded: state)
    }
}

/// Connects twice with a `client` whose pins the server does not match: both connections fail,
/// and the second does not resume a session of the first. The first stays alive meanwhile, as
/// a pooled neighbour would: OpenSSL itself stops the session of a freed, failed connection.
func assertRefusedByPinsWithoutResumption(client: TLSConfiguration, server: TLSConfiguration,
                                          file: StaticString = #filePath, line: UInt = #line) throws {
    let first = InMemoryConnection(client: client, server: server)
    first.pump()
    let second = InMemoryConnection(client: client, server: server)
    second.pump()
    for connection in [first, second] {
        XCTAssertEqual(connection.client.state, .failed(.pinMismatch), file: file, line: line)
        XCTAssertFalse(connection.client.sessionReused, file: file, line: line)
    }
}

/// Connects twice with the same configurations: the first connection makes a full handshake,
/// the second (the first still open, as in a pool) resumes its session.
func assertSecondConnectionResumes(client: TLSConfiguration, server: TLSConfiguration,
                                   file: StaticString = #filePath, line: UInt = #line) {
    let first = InMemoryConnection(client: client, server: server)
    first.pump()
    let second = InMemoryConnection(client: client, server: server)
    second.pump()
    XCTAssertEqual(first.client.state, .established, file: file, line: line)
    XCTAssertFalse(first.client.sessionReused, file: file, line: line)
    XCTAssertEqual(second.client.state, .established, file: file, line: line)
    XCTAssertTrue(second.client.sessionReused, file: file, line: line)
    XCTAssertTrue(second.server.sessionReused, file: file, line: line)
}
