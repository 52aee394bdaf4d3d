import LoopTestSupport
@testable import Proxy
import XCTest

final class WorkspaceSweepTests: XCTestCase {
    func testAnIdleConnectionKeepsItsWorkspaceOnlyWhileFewAreLentAndNoBurstEnds() throws {
        let test = try LeakCheckedLoop()
        let sweep = WorkspaceSweep(loop: test.loop)
        XCTAssertTrue(sweep.keep(lent: 1, burstEnding: false))
        XCTAssertTrue(sweep.keep(lent: WorkspaceSweep.maxLent, burstEnding: false))
        XCTAssertFalse(sweep.keep(lent: WorkspaceSweep.maxLent + 1, burstEnding: false),
                       "in a burst it gives its workspace back as its exchange ends")
        XCTAssertFalse(sweep.keep(lent: 1, burstEnding: true), "nor while the memory of a burst is to be returned")
        XCTAssertEqual(sweep.kept, 2)
        sweep.release()
        XCTAssertEqual(sweep.kept, 1)
        sweep.close()
        test.closeAndCheckForLeaks()
    }

    func testPassesComeWhileAWorkspaceIsKeptAndStopWhenNoneIs() throws {
        let test = try LeakCheckedLoop()
        let sweep = WorkspaceSweep(loop: test.loop)
        var passes = 0
        sweep.whenDue { [unowned sweep] in
            passes += 1
            if passes == 2 { sweep.release() }
        }
        test.run(forMilliseconds: 2 * WorkspaceSweep.intervalMilliseconds)
        XCTAssertEqual(passes, 0, "no pass while nothing is kept")
        XCTAssertTrue(sweep.keep(lent: 1, burstEnding: false))
        test.run(until: "two passes came", seconds: 5) { passes == 2 }
        test.run(forMilliseconds: 3 * WorkspaceSweep.intervalMilliseconds)
        XCTAssertEqual(passes, 2, "none kept since the second pass: no third")
        sweep.close()
        test.closeAndCheckForLeaks()
    }
}
