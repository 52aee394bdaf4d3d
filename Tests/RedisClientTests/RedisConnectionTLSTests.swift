import EventLoop
import Foundation
import LoopTestSupport
import RedisClient
import RedisProtocol
import TLS
import XCTest

/// One connection over TLS to a redis-server serving TLS only: commands as over TCP, and a
/// certificate the relay does not accept refused with the reason, as a connection failure.
final class RedisConnectionTLSTests: XCTestCase {
    private var test: LeakCheckedLoop!
    private var loop: EventLoop { test.loop }
    private var directory: URL!

    override func setUpWithError() throws {
        test = try LeakCheckedLoop()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("redis-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        // A CA, a server certificate for 127.0.0.1 it signed, a client certificate, and another CA.
        try openssl("req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem -days 2 -subj /CN=test-ca")
        try openssl("req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout other.key -out other.pem -days 2 -subj /CN=other-ca")
        for (name, extensions) in [("server", "subjectAltName=IP:127.0.0.1"), ("client", "extendedKeyUsage=clientAuth")] {
            try openssl("req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout \(name).key -out \(name).csr -subj /CN=\(name)")
            try Data(extensions.utf8).write(to: directory.appendingPathComponent("\(name).ext"))
            try openssl("x509 -req -in \(name).csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -out \(name).pem -extfile \(name).ext")
        }
    }

    override func tearDown() {
        test.closeAndCheckForLeaks()
        try? FileManager.default.removeItem(at: directory)
    }

    private func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    private func openssl(_ arguments: String) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = arguments.split(separator: " ").map(String.init)
        process.currentDirectoryURL = directory
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0, "openssl \(arguments)")
    }

    private func server(requireClientCertificates: Bool = false) throws -> RedisServer {
        try RedisServer(tls: RedisServer.TLSFiles(certificate: path("server.pem"), key: path("server.key"), ca: path("ca.pem"),
                                                  requireClientCertificates: requireClientCertificates))
    }

    /// Opens a connection over TLS and runs the loop until it is ready or ended.
    private func open(port: UInt16, tls: TLSConfiguration) -> (RedisConnection, Result<Void, RedisConnection.Failure>?) {
        var outcome: Result<Void, RedisConnection.Failure>?
        let endpoint = RedisEndpoint(host: "127.0.0.1", port: port, usesTLS: true)
        let connection = RedisConnection(loop: loop, endpoint: endpoint, timeoutMilliseconds: 2000, tls: tls,
                                         onReady: { outcome = .success(()) }, onEnded: { outcome = outcome ?? .failure($0) })
        test.run(until: "the connection is open or failed") { outcome != nil }
        return (connection, outcome)
    }

    func testCommandsGetTheirRepliesOverTLS() throws {
        let server = try server()
        defer { server.stop() }
        let (connection, opened) = open(port: server.port, tls: try TLSConfiguration.client(caFile: path("ca.pem"), trustSystemRoots: false))
        XCTAssertNotNil(try opened?.get())
        var replies: [RedisReply] = []
        connection.send(RedisCommand(["SET", "k", .bytes([0, 13, 10, 255])])) { replies.append((try? $0.get()) ?? .null) }
        connection.send(RedisCommand(["GET", "k"])) { replies.append((try? $0.get()) ?? .null) }
        test.run(until: "two replies") { replies.count == 2 }
        XCTAssertEqual(replies, [.status("OK"), .bulk([0, 13, 10, 255])])
        connection.close()
    }

    func testACertificateFromAnotherCAIsUnreachableWithTheReason() throws {
        let server = try server()
        defer { server.stop() }
        let (connection, outcome) = open(port: server.port, tls: try TLSConfiguration.client(caFile: path("other.pem"), trustSystemRoots: false))
        guard case .failure(.unreachable(let reason)) = outcome else { return XCTFail("got \(String(describing: outcome))") }
        XCTAssertTrue(reason.hasPrefix("127.0.0.1:\(server.port): TLS: certificate not trusted (unknown CA)"), reason)
        XCTAssertFalse(connection.isReady)
    }

    func testAServerThatRequiresAClientCertificateTakesOursAndEndsAConnectionWithout() throws {
        let server = try server(requireClientCertificates: true)
        defer { server.stop() }
        let withCertificate = try TLSConfiguration.client(caFile: path("ca.pem"), trustSystemRoots: false,
                                                          clientCertificateFile: path("client.pem"), clientKeyFile: path("client.key"))
        let (connection, opened) = open(port: server.port, tls: withCertificate)
        XCTAssertNotNil(try opened?.get())
        connection.close()
        let (_, refused) = open(port: server.port, tls: try TLSConfiguration.client(caFile: path("ca.pem"), trustSystemRoots: false))
        guard case .failure(let failure) = refused else { return XCTFail("a connection without a client certificate opened") }
        // TLS 1.3: the client has finished its side of the handshake when the server refuses it.
        XCTAssertEqual("\(failure)", "connection closed: TLS: TLS protocol error: tlsv13 alert certificate required")
    }
}
