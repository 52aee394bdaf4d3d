import WatchedFiles
import XCTest

/// The watcher's decision, with no file system: which of a configuration's files changed
/// between two observations.
final class WatchedFileChangesTests: XCTestCase {
    private let cert = WatchedFile(key: "$.listenTls.certFile", path: "/tls/tls.crt")
    private let key = WatchedFile(key: "$.listenTls.keyFile", path: "/tls/tls.key")
    private let routeCA = WatchedFile(key: "$.routes[0].tls.caFile", path: "/ca.pem")
    private let identityCA = WatchedFile(key: "$.identities.orders.tls.caFile", path: "/ca.pem")

    private func identity(_ inode: UInt64, mtime: Int64 = 1, size: Int64 = 10, target: String? = nil) -> FileIdentity {
        FileIdentity(device: 1, inode: inode, modificationNanoseconds: mtime, size: size, resolvedPath: target ?? "/real/\(inode)")
    }

    private func changes() -> WatchedFileChanges {
        WatchedFileChanges(files: [cert, key, routeCA, identityCA],
                           observed: [cert.path: identity(1), key.path: identity(2), routeCA.path: identity(3)])
    }

    func testNothingChangedWhenEveryIdentityIsTheSame() {
        XCTAssertEqual(changes().changed(in: [cert.path: identity(1), key.path: identity(2), routeCA.path: identity(3)]), [])
    }

    func testEachFieldOfTheIdentityCountsAsAChange() {
        let variants: [(String, FileIdentity)] = [
            ("inode", identity(9, target: "/real/1")),
            ("modification time", identity(1, mtime: 2)),
            ("size", identity(1, size: 11)),
            ("resolved path", identity(1, target: "/real/..2026_01_01/tls.crt")),
            ("device", FileIdentity(device: 2, inode: 1, modificationNanoseconds: 1, size: 10, resolvedPath: "/real/1")),
        ]
        for (name, changed) in variants {
            XCTAssertEqual(changes().changed(in: [cert.path: changed, key.path: identity(2), routeCA.path: identity(3)]), [cert], name)
        }
    }

    func testAFileThatDisappearsOrAppearsChangedButOneStillMissingDidNot() {
        let missing = WatchedFileChanges(files: [cert], observed: [:])
        XCTAssertEqual(missing.changed(in: [:]), [])
        XCTAssertEqual(missing.changed(in: [cert.path: nil]), [])
        XCTAssertEqual(missing.changed(in: [cert.path: identity(1)]), [cert])
        XCTAssertEqual(changes().changed(in: [key.path: identity(2), routeCA.path: identity(3)]), [cert])
    }

    func testTwoSettingsNamingOneFileChangeTogetherInTheConfigurationsOrder() {
        XCTAssertEqual(changes().changed(in: [cert.path: identity(1), key.path: identity(5), routeCA.path: identity(6)]),
                       [key, routeCA, identityCA])
    }

    func testPathsAreEachObservedOnce() {
        XCTAssertEqual(changes().paths, ["/tls/tls.crt", "/tls/tls.key", "/ca.pem"])
    }

    func testAnAdoptedObservationIsNoChangeAnyMore() {
        var watched = changes()
        let rotated: [String: FileIdentity?] = [cert.path: identity(7), key.path: identity(8), routeCA.path: identity(3)]
        XCTAssertEqual(watched.changed(in: rotated), [cert, key])
        watched.adopt(rotated)
        XCTAssertEqual(watched.changed(in: rotated), [])
        // A file gone mid-rotation is held as missing: its return is the next change.
        watched.adopt([key.path: identity(8), routeCA.path: identity(3)])
        XCTAssertEqual(watched.changed(in: [key.path: identity(8), routeCA.path: identity(3)]), [])
        XCTAssertEqual(watched.changed(in: [cert.path: identity(9), key.path: identity(8), routeCA.path: identity(3)]), [cert])
    }

    func testFollowingAnotherConfigurationKeepsWhatWasHeldForItsOldPathsAndTakesNewOnes() {
        var watched = changes()
        let dpop = WatchedFile(key: "$.identities.orders.dpop.keyFile", path: "/dpop.pem")
        watched.follow([cert, dpop], observed: [cert.path: identity(42), dpop.path: identity(4)])
        XCTAssertEqual(watched.files, [cert, dpop])
        XCTAssertEqual(watched.paths, ["/tls/tls.crt", "/dpop.pem"])
        // The certificate's held identity is the one from before: its rotation during the reload is still seen.
        XCTAssertEqual(watched.changed(in: [cert.path: identity(42), dpop.path: identity(4)]), [cert])
        XCTAssertEqual(watched.changed(in: [cert.path: identity(1), dpop.path: identity(4)]), [])
    }
}
