import FileTestSupport
@testable import LocalCA
import Routing
import Synchronization
import XCTest

/// 2026-11-27 00:00:00 UTC: the tests' "now", so that validity checks do not depend on the day.
let testNow: Int64 = 1_795_737_600

let apiAndExample: [HostPattern] = [.exact("api.test"), .wildcard(suffix: "example.com")]

/// A test case with a fresh scratch directory; `caDirectory` is not created (the CA creates it).
class CADirectoryTestCase: XCTestCase {
    var scratch: TemporaryDirectory!
    var caDirectory: String { scratch.path + "/forward-ca" }

    override func setUpWithError() throws {
        scratch = try TemporaryDirectory()
    }

    override func tearDown() {
        scratch.remove()
    }

    func authority(_ hosts: [HostPattern] = apiAndExample, now: Int64 = testNow) throws -> (LocalCA, LocalCA.Change) {
        try LocalCA.loadOrCreate(directory: caDirectory, hosts: hosts, now: now)
    }

    func bytes(_ file: String) throws -> [UInt8] {
        try scratch.bytes(of: "forward-ca/" + file)
    }

    func mode(_ file: String) throws -> Int {
        try scratch.mode(of: file.isEmpty ? "forward-ca" : "forward-ca/" + file)
    }

    func chmod(_ file: String, _ mode: Int) throws {
        let path = file.isEmpty ? caDirectory : caDirectory + "/" + file
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
    }
}

/// A clock the test moves.
final class TestClock: Sendable {
    let seconds: Atomic<Int64>

    init(_ seconds: Int64) {
        self.seconds = Atomic(seconds)
    }

    func set(_ value: Int64) {
        seconds.store(value, ordering: .relaxed)
    }

    var read: @Sendable () -> Int64 {
        { [self] in seconds.load(ordering: .relaxed) }
    }
}
