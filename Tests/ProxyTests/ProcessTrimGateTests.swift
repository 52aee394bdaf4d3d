@testable import Proxy
import Dispatch
import Locking
import XCTest

/// One `malloc_trim` per interval in the whole process, whichever workers ask.
final class ProcessTrimGateTests: XCTestCase {
    private let interval: UInt64 = 10_000

    func testTwoWorkersEndingTheSameBurstTrimOnce() {
        let gate = ProcessTrimGate(intervalMilliseconds: interval)
        XCTAssertEqual(gate.claim(now: 5_000, lastFreedAt: 4_000), .trim)
        // The second worker's frees stopped before the first one's trim: already returned.
        XCTAssertEqual(gate.claim(now: 5_300, lastFreedAt: 4_100), .done)
    }

    func testAWorkerThatFreedAfterTheTrimWaitsForTheIntervalThenTrims() {
        let gate = ProcessTrimGate(intervalMilliseconds: interval)
        XCTAssertEqual(gate.claim(now: 5_000, lastFreedAt: 4_000), .trim)
        XCTAssertEqual(gate.claim(now: 5_900, lastFreedAt: 5_200), .wait(until: 5_000 + interval))
        XCTAssertEqual(gate.claim(now: 5_000 + interval, lastFreedAt: 5_200), .trim)
        // A third worker that waited for the same time finds it done.
        XCTAssertEqual(gate.claim(now: 5_000 + interval, lastFreedAt: 5_500), .done)
    }

    func testTrimsAfterTheIntervalAreClaimedAgain() {
        let gate = ProcessTrimGate(intervalMilliseconds: interval)
        XCTAssertEqual(gate.claim(now: 5_000, lastFreedAt: 4_000), .trim)
        XCTAssertEqual(gate.claim(now: 40_000, lastFreedAt: 39_000), .trim)
    }

    /// Workers on their own threads asking at once: exactly one claims the trim.
    func testConcurrentClaimsForOneBurstTrimOnce() {
        let gate = ProcessTrimGate(intervalMilliseconds: interval)
        let claimed = Locked(0)
        DispatchQueue.concurrentPerform(iterations: 8) { worker in
            if gate.claim(now: 5_000 + UInt64(worker), lastFreedAt: 4_000) == .trim {
                claimed.withLock { $0 += 1 }
            }
        }
        XCTAssertEqual(claimed.withLock { $0 }, 1)
    }
}
