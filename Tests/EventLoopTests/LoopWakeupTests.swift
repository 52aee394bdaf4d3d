@testable import EventLoop
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
}
