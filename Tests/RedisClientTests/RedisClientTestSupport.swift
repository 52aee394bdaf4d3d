import EventLoop
import Foundation
import XCTest

/// A loop a test runs step by step and closes at the end, failing when a handle (of ours or of
/// hiredis's libuv adapter) is left open: each test is also a leak check.
final class CheckedLoop {
    let loop: EventLoop

    init() throws {
        loop = try EventLoop()
    }

    /// Runs the loop until `done()` holds; fails the test after `seconds`.
    func run(until what: String, seconds: UInt64 = 5, file: StaticString = #filePath, line: UInt = #line, _ done: () -> Bool) {
        var timedOut = false
        let deadline = LoopTimer(loop: loop) { timedOut = true }
        deadline.start(afterMilliseconds: seconds * 1000)
        while !done() && !timedOut { loop.runOnce(wait: true) }
        deadline.close()
        if timedOut { XCTFail("timed out after \(seconds) s waiting until \(what)", file: file, line: line) }
    }

    /// Runs the loop until nothing is left on it (at most 5 s) and closes it.
    func closeAndCheckForLeaks(file: StaticString = #filePath, line: UInt = #line) {
        var stuck = false
        let watchdog = LoopTimer(loop: loop) { [loop] in
            stuck = true
            loop.stop()
        }
        watchdog.unref()
        watchdog.start(afterMilliseconds: 5000)
        loop.run()
        watchdog.close()
        loop.runOnce(wait: false)
        XCTAssertFalse(stuck, "the loop was still running after 5 s: a handle was left active", file: file, line: line)
        XCTAssertEqual(loop.openHandles, 0, "handles left open", file: file, line: line)
        XCTAssertNoThrow(try loop.close(), "uv_loop_close", file: file, line: line)
    }
}

/// A redis-server (Debian's) on a free loopback port, with nothing saved to disk.
final class RedisServer {
    let port: UInt16
    private let process = Process()
    private let directory: URL

    init(extraArguments: [String] = []) throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/redis-server") else {
            throw XCTSkip("redis-server is not installed (scripts/install-deps --test)")
        }
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("redis-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        port = try Self.freePort()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/redis-server")
        process.arguments = ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                             "--dir", directory.path] + extraArguments
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

    enum RedisServerError: Error { case didNotStart }

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
