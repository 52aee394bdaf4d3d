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
}
