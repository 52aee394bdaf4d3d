import CertificateTestSupport
import Config
import Foundation
import Logging
@testable import Proxy
import TLS
import XCTest

/// The forward proxy's interception end to end, in process: a `RelayServer` whose settings carry
/// a test `InterceptionLeaves` (a leaf for `api.intercept.test` signed by a CA made here with the
/// openssl command), the echo upstream of the integration tests as the route's upstream, and
/// curl as the client (`-x` to the forward listener, `--cacert` the test CA).
final class ForwardInterceptionTests: XCTestCase {
    static let host = "api.intercept.test"

    /// Serves the test leaf for `api.intercept.test`, nothing for other hosts.
    struct TestLeaves: InterceptionLeaves {
        let configuration: TLSConfiguration
        func serverConfiguration(forHost host: String) -> TLSConfiguration? {
            host == ForwardInterceptionTests.host ? configuration : nil
        }
    }

    var directory = ""
    var upstream: Process?
    var server: RelayServer?

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("forward-interception-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try shell("""
            openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem -days 1 \
              -subj '/CN=forward interception test CA' -addext basicConstraints=critical,CA:TRUE \
              -addext keyUsage=critical,keyCertSign,cRLSign
            openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout leaf.key -out leaf.csr -subj '/CN=\(Self.host)'
            printf 'subjectAltName=DNS:\(Self.host)\\nextendedKeyUsage=serverAuth\\nbasicConstraints=CA:FALSE\\n' > leaf.ext
            openssl x509 -req -in leaf.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out leaf.pem -days 1 -extfile leaf.ext
            """)
    }

    override func tearDown() {
        server?.stop()
        server?.wait()
        upstream?.terminate()
        upstream?.waitUntilExit()
        try? FileManager.default.removeItem(atPath: directory)
    }

    @discardableResult
    private func shell(_ script: String) throws -> String {
        try TestShell.run("set -e\n" + script, in: directory)
    }

    /// Starts the echo upstream (tests/integration/echo_upstream.py) and returns its port.
    private func startUpstream() throws -> Int {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("tests/integration/echo_upstream.py").path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script, "--port", "0"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        upstream = process
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = output.fileHandleForReading.availableData
            guard !chunk.isEmpty else { break }
            line.append(chunk)
        }
        let words = String(decoding: line, as: UTF8.self).split(separator: " ")
        let port = words.count >= 3 ? Int(words[2].trimmingCharacters(in: .whitespacesAndNewlines)) : nil
        return try XCTUnwrap(port, "the echo upstream did not start")
    }

    private func startRelay(leaves: (any InterceptionLeaves)?) throws -> String {
        let upstreamPort = try startUpstream()
        let json = """
            { "listen": "127.0.0.1:0", "admin": null, "workers": 1,
              "routes": [ { "name": "api", "match": { "host": "\(Self.host)", "pathPrefix": "/v1/" },
                            "upstream": "http://127.0.0.1:\(upstreamPort)", "setHeaders": { "X-Route": "api" } } ] }
            """
        var config = try ConfigLoader.decode(json: Data(json.utf8), baseDirectory: directory, environment: [:])
        config.forward = ForwardListener(address: HostPort(host: "127.0.0.1", port: 0))
        let settings = ProxySettings(config: config, interceptionLeaves: leaves)
        let server = try RelayServer.start(settings: settings, workers: 1, logger: Logger(label: "forward-interception-test"))
        self.server = server
        return try XCTUnwrap(server.boundForwardAddress)
    }

    private func leaves() throws -> TestLeaves {
        TestLeaves(configuration: try TLSConfiguration.server(certificateFile: directory + "/leaf.pem", keyFile: directory + "/leaf.key"))
    }

    /// curl through the forward proxy: the exit code and what `-i` printed (the CONNECT's answer,
    /// then the response).
    private func curl(_ proxy: String, _ url: String, _ arguments: [String] = []) throws -> (Int32, String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["curl", "-sS", "-i", "--max-time", "15", "-x", "http://\(proxy)", "--cacert", directory + "/ca.pem"]
            + arguments + [url]
        process.environment = ProcessInfo.processInfo.environment.filter { !$0.key.lowercased().contains("proxy") }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    func testAnInterceptedHostIsServedWithItsLeafAndTheRouteApplied() throws {
        let proxy = try startRelay(leaves: try leaves())
        let (status, output) = try curl(proxy, "https://\(Self.host)/v1/items?q=1")
        XCTAssertEqual(status, 0, output)
        XCTAssertTrue(output.hasPrefix("HTTP/1.1 200 Connection established\r\n\r\nHTTP/1.1 200 "), output)
        let body = try XCTUnwrap(output.components(separatedBy: "\r\n\r\n").last)
        let echo = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])
        XCTAssertEqual(echo["target"] as? String, "/v1/items?q=1")
        let headers = try XCTUnwrap(echo["headers"] as? [[String]])
        XCTAssertTrue(headers.contains(["X-Route", "api"]), "\(headers)")
        XCTAssertTrue(headers.contains(["X-Forwarded-Proto", "https"]), "\(headers)")
    }

    func testTwoRequestsShareTheInterceptedConnection() throws {
        let proxy = try startRelay(leaves: try leaves())
        let (status, output) = try curl(proxy, "https://\(Self.host)/v1/a", ["-o", "/dev/null", "https://\(Self.host)/v1/b",
                                                                                "-w", "%{http_code} %{num_connects}\\n"])
        XCTAssertEqual(status, 0, output)
        XCTAssertTrue(output.hasSuffix("200 0\n"), output)
    }

    func testARequestNamingAnotherHostInsideTheTunnelIsMisdirected() throws {
        let proxy = try startRelay(leaves: try leaves())
        let (_, output) = try curl(proxy, "https://\(Self.host)/v1/x", ["-H", "Host: other.example"])
        XCTAssertTrue(output.contains("\r\n\r\nHTTP/1.1 421 "), output)
        XCTAssertTrue(output.contains("this connection was opened with CONNECT \(Self.host):443"), output)
    }

    func testAPathNoRouteTakesInsideTheTunnelIs404() throws {
        let proxy = try startRelay(leaves: try leaves())
        let (_, output) = try curl(proxy, "https://\(Self.host)/other")
        XCTAssertTrue(output.contains("\r\n\r\nHTTP/1.1 404 "), output)
    }

    /// A client that sends its TLS ClientHello in the same write as the CONNECT head, without
    /// waiting for the 200 (python's ssl over memory BIOs): the bytes after the head start the
    /// handshake.
    static let pipelinedClient = #"""
        import socket, ssl, sys
        proxy_host, proxy_port, host, ca = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
        incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        tls = ssl.create_default_context(cafile=ca).wrap_bio(incoming, outgoing, server_hostname=host)
        try:
            tls.do_handshake()
        except ssl.SSLWantReadError:
            pass
        sock = socket.create_connection((proxy_host, proxy_port), timeout=10)
        sock.sendall(b"CONNECT %s:443 HTTP/1.1\r\nHost: %s:443\r\n\r\n" % (host.encode(), host.encode()) + outgoing.read())
        received = b""
        while b"\r\n\r\n" not in received:
            received += sock.recv(65536)
        head, rest = received.split(b"\r\n\r\n", 1)
        print(head.decode())
        incoming.write(rest)
        while True:
            try:
                tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                sock.sendall(outgoing.read())
                incoming.write(sock.recv(65536))
        tls.write(b"GET /v1/pipelined HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % host.encode())
        sock.sendall(outgoing.read())
        response = b""
        while True:
            data = sock.recv(65536)
            if not data:
                break
            incoming.write(data)
            try:
                while chunk := tls.read(65536):
                    response += chunk
            except (ssl.SSLWantReadError, ssl.SSLZeroReturnError):
                pass
        print(response.decode())
        """#

    func testAClientHelloSentWithTheConnectHeadStartsTheHandshake() throws {
        let proxy = try startRelay(leaves: try leaves())
        try Self.pipelinedClient.write(toFile: directory + "/pipelined.py", atomically: true, encoding: .utf8)
        let colon = try XCTUnwrap(proxy.lastIndex(of: ":"))
        let output = try shell("python3 pipelined.py \(proxy[..<colon]) \(proxy[proxy.index(after: colon)...]) \(Self.host) ca.pem")
        XCTAssertTrue(output.hasPrefix("HTTP/1.1 200 Connection established\n"), output)
        XCTAssertTrue(output.contains("HTTP/1.1 200 OK"), output)
        XCTAssertTrue(output.contains("\"target\": \"/v1/pipelined\"") || output.contains("\"target\":\"/v1/pipelined\""), output)
    }

    func testAHostWithoutALeafIsA502BeforeAnyTunnel() throws {
        let proxy = try startRelay(leaves: nil)
        let (status, output) = try curl(proxy, "https://\(Self.host)/v1/x")
        XCTAssertNotEqual(status, 0)
        // curl tells the CONNECT's status, not its head, when the tunnel fails.
        XCTAssertTrue(output.contains("CONNECT tunnel failed, response 502"), output)
    }
}
