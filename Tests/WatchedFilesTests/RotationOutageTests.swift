import WatchedFiles
import XCTest

/// One warning per outage: the first failed re-apply warns, the next ones do not, and a success
/// after them says the outage is over.
final class RotationOutageTests: XCTestCase {
    func testAFailureWarnsOnceUntilAReapplySucceeds() {
        var outage = RotationOutage.none
        XCTAssertEqual(outage.record(applied: true), .applied(afterOutage: false))
        XCTAssertEqual(outage.record(applied: false), .warnOutageStarted)
        XCTAssertEqual(outage.record(applied: false), .stillFailing)
        XCTAssertEqual(outage.record(applied: false), .stillFailing)
        XCTAssertEqual(outage.record(applied: true), .applied(afterOutage: true))
        XCTAssertEqual(outage.record(applied: true), .applied(afterOutage: false))
        XCTAssertEqual(outage.record(applied: false), .warnOutageStarted)
        XCTAssertEqual(outage, .failing)
    }

    /// While the last re-apply failed, every observation tries again, changed files or not: the
    /// cause may be a file no watcher looks at.
    func testAFailingReapplyIsRetriedWithoutAnyChange() {
        var outage = RotationOutage.none
        XCTAssertFalse(outage.reapplies(filesChanged: false))
        XCTAssertTrue(outage.reapplies(filesChanged: true))
        _ = outage.record(applied: false)
        XCTAssertTrue(outage.reapplies(filesChanged: false))
        _ = outage.record(applied: true)
        XCTAssertFalse(outage.reapplies(filesChanged: false))
    }
}
