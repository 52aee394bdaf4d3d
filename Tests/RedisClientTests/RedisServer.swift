import Foundation
import XCTest

/// A redis-server (Debian's) on a free loopback port, with nothing saved to disk.
final class RedisServer {
    let port: UInt16
    private let process = Process()
    private let directory: URL

    /// The files of a TLS-only server (`--port 0 --tls-port`): its certificate and key, and the CA
    /// it checks client certificates with (required with `requireClientCertificates`).
    struct TLSFiles {
        var certificate: String
        var key: String
        var ca: String
        var requireClientCertificates = false
    }

    init(extraArguments: [String] = [], tls: TLSFiles? = nil) throws {
        // A failure, not a skip: a machine without it would pass these tests by running none.
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/redis-server") else { throw RedisServerError.notInstalled }
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("redis-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        port = try Self.freePort()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/redis-server")
        process.arguments = ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                             "--dir", directory.path] + extraArguments
        if let tls {
            // The last --port wins: TLS only, on the port chosen.
            process.arguments! += ["--port", "0", "--tls-port", String(port), "--tls-cert-file", tls.certificate,
                                   "--tls-key-file", tls.key, "--tls-ca-cert-file", tls.ca,
                                   "--tls-auth-clients", tls.requireClientCertificates ? "yes" : "no"]
        }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(10)
        while !Self.accepts(port) {
            guard Date() < deadline, process.isRunning else { throw RedisServerError.didNotStart }
            usleep(20_000)
        }
    }

    func stop() {
        process.terminate()
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: directory)
    }

    enum RedisServerError: Error, CustomStringConvertible {
        case notInstalled, didNotStart

        var description: String {
            switch self {
            case .notInstalled: "redis-server is not installed at /usr/bin/redis-server (scripts/install-deps --unit-test or --test installs it)"
            case .didNotStart: "redis-server did not listen within 10 s"
            }
        }
    }

    private static func freePort() throws -> UInt16 {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        try withUnsafeMutablePointer(to: &address) { pointer in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                guard bind(descriptor, $0, length) == 0, getsockname(descriptor, $0, &length) == 0 else { throw RedisServerError.didNotStart }
            }
        }
        return UInt16(bigEndian: address.sin_port)
    }

    private static func accepts(_ port: UInt16) -> Bool {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }
}
