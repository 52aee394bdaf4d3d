@testable import EventLoop
import Synchronization
import LoopTestSupport
import XCTest

final class LoopWakeupTests: XCTestCase {
    func testWakeFromAnotherThreadRunsTheCallbackOnTheLoopsThread() throws {
        let test = try LeakCheckedLoop()
        let loopThread = pthread_self()
        var callbackThreads: [pthread_t] = []
        let wakeup = LoopWakeup(loop: test.loop) { callbackThreads.append(pthread_self()) }
        let waker = WorkerThread { wakeup.wake() }
        test.run(until: "the wakeup callback ran") { !callbackThreads.isEmpty }
        waker.join()

        XCTAssertEqual(callbackThreads.count, 1)
        XCTAssertTrue(callbackThreads.allSatisfy { pthread_equal($0, loopThread) != 0 }, "the callback ran off the loop's thread")
        wakeup.close()
        test.closeAndCheckForLeaks()
    }

    /// A wake-up closed by its worker may still be woken by the token thread. Its handle's memory
    /// is freed by then and, here, most likely taken by the next handle allocated: a wake that
    /// still reached libuv would run that other handle's callback.
    func testAWakeAfterCloseReachesNoOtherHandle() throws {
        let test = try LeakCheckedLoop()
        let closed = LoopWakeup(loop: test.loop) {}
        closed.close()
        test.run(forMilliseconds: 10)
        var woken = false
        let next = LoopWakeup(loop: test.loop) { woken = true }
        closed.wake()
        test.run(forMilliseconds: 20)
        XCTAssertFalse(woken, "a wake of a closed handle ran another handle's callback")
        next.close()
        test.closeAndCheckForLeaks()
    }

    /// A worker closes its wake-up while the token thread may still wake it: the wakes that
    /// come during and after the close must not touch the freed handle (run under
    /// AddressSanitizer or ThreadSanitizer to see the difference; without the lock, `wake()`
    /// after the close callback writes into freed memory).
    func testWakesRacingWithCloseNeverReachTheClosedHandle() throws {
        let test = try LeakCheckedLoop()
        let wakeup = LoopWakeup(loop: test.loop) {}
        let flags = RaceFlags()
        let waker = WorkerThread {
            flags.started.store(true, ordering: .releasing)
            while !flags.stop.load(ordering: .acquiring) {
                wakeup.wake()
                flags.wakes.add(1, ordering: .relaxed)
            }
            // And some after the close callback freed the handle.
            for _ in 0..<1000 { wakeup.wake() }
        }
        while !flags.started.load(ordering: .acquiring) { sched_yield() }
        test.loop.runOnce(wait: false)
        wakeup.close()
        // The close callback frees the handle during this run; the waker goes on meanwhile.
        test.run(forMilliseconds: 20)
        flags.stop.store(true, ordering: .releasing)
        waker.join()
        XCTAssertGreaterThan(flags.wakes.load(ordering: .relaxed), 0)
        test.closeAndCheckForLeaks()
    }
}

private final class RaceFlags: Sendable {
    let started = Atomic<Bool>(false)
    let stop = Atomic<Bool>(false)
    let wakes = Atomic<Int>(0)
}
