import FileTestSupport
import Foundation
import WatchedFiles
import XCTest

/// `FileIdentity.observe` on real files: each of the three ways a credential rotates on disk makes
/// another identity, and nothing else does.
final class FileIdentityTests: XCTestCase {
    private var directory: TemporaryDirectory!

    override func setUpWithError() throws {
        directory = try TemporaryDirectory()
    }

    override func tearDown() {
        directory.remove()
    }

    private func path(_ name: String) -> String { directory.path + "/" + name }

    func testAFileObservedTwiceWithoutAChangeHasTheSameIdentity() throws {
        try directory.write("tls.crt", "one")
        let first = try XCTUnwrap(FileIdentity.observe(path: path("tls.crt")))
        XCTAssertEqual(FileIdentity.observe(path: path("tls.crt")), first)
        XCTAssertEqual(first.size, 3)
        XCTAssertEqual(first.resolvedPath, path("tls.crt"))
    }

    func testAMissingFileOrADanglingSymlinkHasNoIdentity() throws {
        XCTAssertNil(FileIdentity.observe(path: path("absent")))
        try FileManager.default.createSymbolicLink(atPath: path("dangling"), withDestinationPath: path("absent"))
        XCTAssertNil(FileIdentity.observe(path: path("dangling")))
    }

    func testAnInPlaceRewriteOfTheSameSizeIsAnotherIdentity() throws {
        try directory.write("tls.crt", "one")
        let before = try XCTUnwrap(FileIdentity.observe(path: path("tls.crt")))
        // The same inode and size: only the modification time moves (set explicitly, so the test
        // does not depend on the file system's timestamp granularity).
        let handle = try XCTUnwrap(FileHandle(forWritingAtPath: path("tls.crt")))
        handle.write(Data("two".utf8))
        try handle.close()
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: 5)], ofItemAtPath: path("tls.crt"))
        let after = try XCTUnwrap(FileIdentity.observe(path: path("tls.crt")))
        XCTAssertEqual(after.inode, before.inode)
        XCTAssertEqual(after.size, before.size)
        XCTAssertNotEqual(after, before)
    }

    func testADeleteThenCreateIsAnotherIdentity() throws {
        try directory.write("tls.crt", "one")
        // Another file exists meanwhile, so the inode of the deleted one is not reused at once.
        try directory.write("keep", "x")
        let before = try XCTUnwrap(FileIdentity.observe(path: path("tls.crt")))
        try FileManager.default.removeItem(atPath: path("tls.crt"))
        XCTAssertNil(FileIdentity.observe(path: path("tls.crt")))
        try directory.write("other", "y")
        try directory.write("tls.crt", "one")
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: 5)], ofItemAtPath: path("tls.crt"))
        XCTAssertNotEqual(FileIdentity.observe(path: path("tls.crt")), before)
    }

    /// kubelet's AtomicWriter: `tls.crt -> ..data/tls.crt`, `..data -> ..<timestamp>`, and a
    /// rotation renames a new `..data` symlink over the old one.
    func testAKubernetesDataSymlinkSwapIsAnotherIdentityWithAnotherResolvedPath() throws {
        let manager = FileManager.default
        for (stamp, content) in [("..2026_01_01_00_00_00.1", "one"), ("..2026_01_01_01_00_00.2", "two")] {
            try manager.createDirectory(atPath: path(stamp), withIntermediateDirectories: false)
            try directory.write(stamp + "/tls.crt", content)
        }
        try manager.createSymbolicLink(atPath: path("..data"), withDestinationPath: "..2026_01_01_00_00_00.1")
        try manager.createSymbolicLink(atPath: path("tls.crt"), withDestinationPath: "..data/tls.crt")
        let before = try XCTUnwrap(FileIdentity.observe(path: path("tls.crt")))
        XCTAssertEqual(before.resolvedPath, path("..2026_01_01_00_00_00.1/tls.crt"))

        try manager.createSymbolicLink(atPath: path("..data_tmp"), withDestinationPath: "..2026_01_01_01_00_00.2")
        XCTAssertEqual(rename(path("..data_tmp"), path("..data")), 0)
        let after = try XCTUnwrap(FileIdentity.observe(path: path("tls.crt")))
        XCTAssertEqual(after.resolvedPath, path("..2026_01_01_01_00_00.2/tls.crt"))
        XCTAssertNotEqual(after, before)
    }

    func testWhatIsReadMustStillBeTheFileThatWasLookedAt() throws {
        try directory.write("secret", "one")
        let looked = try FileIdentity.current(of: path("secret")).get()
        XCTAssertEqual(looked.contents(limit: 16).map { String(decoding: $0, as: UTF8.self) }, .success("one"))
        XCTAssertEqual(looked.contents(limit: 2), .failure(.tooLarge(limit: 2)))
        // Replaced between the look and the read (a new file renamed over it, as a Secret's
        // writer does): not read as if it were the file looked at.
        try directory.write("secret.new", "two")
        XCTAssertEqual(rename(path("secret.new"), path("secret")), 0)
        XCTAssertEqual(looked.contents(limit: 16), .failure(.replaced))
        // A FIFO put in its place is refused, not waited on (no writer would ever come).
        try FileManager.default.removeItem(atPath: path("secret"))
        XCTAssertEqual(mkfifo(path("secret"), 0o600), 0)
        XCTAssertEqual(FileIdentity.current(of: path("secret")), .failure(.notAFile))
        XCTAssertEqual(looked.contents(limit: 16), .failure(.notAFile))
    }

    func testTheDescriptionShowsMetadataNotContent() throws {
        try directory.write("key.pem", "-----BEGIN PRIVATE KEY-----secret")
        let identity = try XCTUnwrap(FileIdentity.observe(path: path("key.pem")))
        XCTAssertFalse(identity.description.contains("secret"))
        XCTAssertTrue(identity.description.contains(path("key.pem")))
    }
}
