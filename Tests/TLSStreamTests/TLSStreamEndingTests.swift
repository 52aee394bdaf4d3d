import ByteBuffers
import CertificateTestSupport
@testable import EventLoop
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import LoopTestSupport
import TLS
import TLSStream
import XCTest

/// A TLS server driven by hand over an accepted TCP stream, so a test decides what its socket
/// carries: records, close_notify, a FIN, a record cut short, a reset.
private final class ScriptedServer: ByteStreamDelegate {
    let tcp: TCPStream
    let engine: TLSEngine
    private let space = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 << 10, alignment: 16)
    var isClosed = false

    init(tcp: TCPStream, configuration: TLSConfiguration) {
        self.tcp = tcp
        engine = TLSEngine(server: configuration)
        tcp.delegate = self
        tcp.startReading()
    }

    deinit {
        space.deallocate()
    }

    func stream(_ stream: any ByteStream, didRead bytes: UnsafeRawBufferPointer) {
        _ = engine.read(fed: bytes, into: space) { _ in }
        send(withheld: 0)
    }

    /// Encrypts `plaintext` (then close_notify, if asked) and writes the ciphertext but its
    /// last `withheld` bytes.
    func send(_ plaintext: [UInt8] = [], closeNotify: Bool = false, withheld: Int = 0) {
        if !plaintext.isEmpty { engine.write(plaintext) }
        if closeNotify { engine.close() }
        var ciphertext = ByteBuffer()
        engine.takeOutgoing(into: &ciphertext)
        let bytes = ciphertext.readableBytes
        if bytes.count > withheld { tcp.write(UnsafeRawBufferPointer(rebasing: bytes[..<(bytes.count - withheld)])) }
    }

    /// Closes with a reset (SO_LINGER 0): what was not yet read by the peer may be lost.
    func reset() {
        var linger = linger(l_onoff: 1, l_linger: 0)
        _ = setsockopt(tcp.fileDescriptor, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<linger>.size))
        tcp.close()
    }

    func stream(_ stream: any ByteStream, didEndWith error: UVError?) {}

    func streamDidClose(_ stream: any ByteStream) {
        isClosed = true
    }
}

/// What the client's TLS stream reports.
private final class ClientEvents: ByteStreamDelegate {
    var received: [UInt8] = []
    var connectResult: UVError??
    var ends: [UVError?] = []
    var isClosed = false
    var onRead: ((any ByteStream) -> Void)?
    var onEnd: ((any ByteStream) -> Void)?

    func stream(_ stream: any ByteStream, didRead bytes: UnsafeRawBufferPointer) {
        received += bytes
        onRead?(stream)
    }

    func stream(_ stream: any ByteStream, didEndWith error: UVError?) {
        ends.append(error)
        onEnd?(stream)
    }

    func stream(_ stream: any ByteStream, didConnectWith error: UVError?) {
        connectResult = .some(error)
    }

    func streamDidClose(_ stream: any ByteStream) {
        isClosed = true
    }
}

/// A TLS stream's reading through OpenSSL's own receives (the TCP stream reports readiness, see
/// TLSStream.swift): bodies arrive whole, a stopped stream receives nothing, and the ways a
/// connection ends are reported as the TCP stream reported them, each once.
final class TLSStreamEndingTests: XCTestCase {
    // Written only by the class set-up and tear-down, which XCTest runs outside any test.
    nonisolated(unsafe) private static var directory: String?

    override class func setUp() {
        super.setUp()
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("oauth-relay-tlsstream-tests-\(getpid())-\(UUID().uuidString)").path
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        _ = try? TestShell.run("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout key.pem"
            + " -out cert.pem -days 2 -subj /CN=localhost -addext subjectAltName=DNS:localhost,IP:127.0.0.1", in: directory)
        Self.directory = directory
    }

    override class func tearDown() {
        if let directory { try? FileManager.default.removeItem(atPath: directory) }
        super.tearDown()
    }

    private struct Connection {
        let test: LeakCheckedLoop
        let listener: TCPListener
        let server: ScriptedServer
        let client: any ByteStream
        let events: ClientEvents

        func close() {
            client.close()
            server.tcp.close()
            listener.close()
            test.run(until: "both sides closed") { events.isClosed && server.isClosed }
            test.closeAndCheckForLeaks()
        }
    }

    private func connect() throws -> Connection {
        let directory = try XCTUnwrap(Self.directory)
        let serverConfiguration = try TLSConfiguration.server(certificateFile: directory + "/cert.pem", keyFile: directory + "/key.pem")
        let clientConfiguration = try TLSConfiguration.client(trustSystemRoots: false, insecureSkipVerify: true)
        let test = try LeakCheckedLoop()
        var server: ScriptedServer?
        let listener = try TCPListener(loop: test.loop, address: try XCTUnwrap(SocketAddress(ip: "127.0.0.1", port: 0)), reusePort: false) { tcp in
            server = ScriptedServer(tcp: tcp, configuration: serverConfiguration)
        }
        let events = ClientEvents()
        let client = try TLSStream.connect(on: test.loop, to: try XCTUnwrap(listener.localAddress), configuration: clientConfiguration,
                                           host: "localhost", delegate: events)
        test.run(until: "the handshake completed") { events.connectResult != nil && server?.engine.state == .established }
        XCTAssertEqual(events.connectResult, .some(nil))
        return Connection(test: test, listener: listener, server: try XCTUnwrap(server), client: client, events: events)
    }

    private func pattern(_ count: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 11) }
    }

    func testABodyArrivesWhole() throws {
        let connection = try connect()
        let body = pattern(3 << 20)
        connection.server.send(body)
        connection.test.run(until: "the body arrived") { connection.events.received.count >= body.count }
        XCTAssertTrue(connection.events.received == body)
        XCTAssertEqual(connection.events.ends.count, 0)
        connection.close()
    }

    func testAStreamThatStoppedReadingReceivesNothingUntilItStartsAgain() throws {
        let connection = try connect()
        let body = pattern(2 << 20)
        // The socket fills while the stream is stopped; then it reads, and stops at the first
        // plaintext handed on (64 KiB: four records).
        connection.client.stopReading()
        connection.server.send(body)
        connection.test.run(forMilliseconds: 100)
        XCTAssertTrue(connection.events.received.isEmpty)
        connection.events.onRead = { stream in stream.stopReading() }
        connection.client.startReading()
        connection.test.run(until: "the first bytes arrived") { !connection.events.received.isEmpty }
        let receivedWhenStopped = connection.events.received.count
        connection.test.run(forMilliseconds: 200)
        XCTAssertEqual(connection.events.received.count, receivedWhenStopped, "nothing received while stopped")
        XCTAssertLessThanOrEqual(receivedWhenStopped, 80 << 10,
                                 "the space handed on, and at most the record OpenSSL had received already")
        connection.events.onRead = nil
        connection.client.startReading()
        connection.test.run(until: "the rest arrived") { connection.events.received.count >= body.count }
        XCTAssertTrue(connection.events.received == body)
        connection.close()
    }

    func testAnEndWithoutCloseNotifyIsTruncation() throws {
        let connection = try connect()
        let body = pattern(40 << 10)
        connection.server.send(body)
        connection.server.tcp.finishWriting()
        connection.test.run(until: "the end was reported") { !connection.events.ends.isEmpty }
        XCTAssertTrue(connection.events.received == body, "every whole record was handed on first")
        XCTAssertEqual(connection.events.ends, [UVError.protocolError])
        XCTAssertEqual(connection.client.failureReason, "\(TLSError.truncated)")
        connection.close()
    }

    func testAnEndInsideARecordIsTruncationAfterTheWholeRecords() throws {
        let connection = try connect()
        let body = pattern(40 << 10)
        connection.server.send(body, withheld: 100)
        connection.server.tcp.finishWriting()
        connection.test.run(until: "the end was reported") { !connection.events.ends.isEmpty }
        XCTAssertTrue(connection.events.received == Array(body.prefix(32 << 10)), "the two whole records, not the cut one")
        XCTAssertEqual(connection.events.ends, [UVError.protocolError])
        XCTAssertEqual(connection.client.failureReason, "\(TLSError.truncated)")
        connection.close()
    }

    func testAResetInsideARecordIsReportedAsTheReset() throws {
        let connection = try connect()
        let body = pattern(40 << 10)
        connection.server.send(body, withheld: 100)
        connection.test.run(until: "the whole records arrived") { connection.events.received.count == 32 << 10 }
        connection.server.reset()
        connection.test.run(until: "the end was reported") { !connection.events.ends.isEmpty }
        XCTAssertEqual(connection.events.ends, [UVError(-ECONNRESET)])
        XCTAssertNil(connection.client.failureReason, "a transport error, not a TLS one")
        connection.close()
    }

    func testCloseNotifyIsACleanEndReportedOnceWhateverFollows() throws {
        let connection = try connect()
        connection.events.onEnd = { stream in stream.startReading() }
        connection.server.send(Array("last words".utf8), closeNotify: true)
        connection.test.run(until: "the end was reported") { !connection.events.ends.isEmpty }
        XCTAssertEqual(String(decoding: connection.events.received, as: UTF8.self), "last words")
        connection.server.tcp.finishWriting()
        connection.test.run(forMilliseconds: 200)
        XCTAssertEqual(connection.events.ends.count, 1, "one end: the TCP end after close_notify reports nothing more")
        XCTAssertEqual(connection.events.ends.first, .some(nil), "a clean end")
        connection.close()
    }
}
