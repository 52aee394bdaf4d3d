@testable import Proxy
import Logging
import LoopTestSupport
import XCTest

/// A worker's `BurstMemoryReturn` on a real loop.
final class BurstMemoryReturnTests: XCTestCase {
    /// The loop's deadline queue holds an armed timer: a worker released after a pool free, without
    /// `close()`, must not be called back when the timer comes up a second later.
    func testATimerComingUpAfterTheWorkerWasReleasedDoesNothing() throws {
        let checked = try LeakCheckedLoop()
        var memory: BurstMemoryReturn? = BurstMemoryReturn(loop: checked.loop, logger: Logger(label: "test"),
                                                           workspaces: WorkspacePool(), gate: ProcessTrimGate())
        memory?.poolFreed()
        weak let released = memory
        memory = nil
        XCTAssertNil(released, "nothing else holds the worker's side")
        checked.run(forMilliseconds: BurstRelease.settleMilliseconds + 100)
        checked.closeAndCheckForLeaks()
    }
}
