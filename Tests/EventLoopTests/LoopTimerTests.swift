@testable import EventLoop
import LoopTestSupport
import XCTest

/// How often a timer armed for 20 ms fires within 100 ms when `cancel` runs right after arming it.
private func firings(whenCancelledBy cancel: (LoopTimer) -> Void, file: StaticString = #filePath, line: UInt = #line) throws -> Int {
    let test = try LeakCheckedLoop()
    var fired = 0
    let timer = LoopTimer(loop: test.loop) { fired += 1 }
    timer.start(afterMilliseconds: 20)
    cancel(timer)
    test.run(forMilliseconds: 100)
    timer.close()
    test.closeAndCheckForLeaks(file: file, line: line)
    return fired
}

final class LoopTimerTests: XCTestCase {
    func testTimerFiresOnceAfterItsDelay() throws {
        let test = try LeakCheckedLoop()
        var firedAt: [UInt64] = []
        let timer = LoopTimer(loop: test.loop) { firedAt.append(EventLoop.monotonicNanoseconds()) }
        // The delay counts from the loop's cached clock: bring it up to date first.
        test.loop.runOnce(wait: false)
        let startedAt = EventLoop.monotonicNanoseconds()
        timer.start(afterMilliseconds: 50)
        test.run(until: "the timer fired") { !firedAt.isEmpty }
        test.run(forMilliseconds: 150)

        XCTAssertEqual(firedAt.count, 1)
        // The loop's clock has millisecond steps, so allow for one.
        let firstFiring = try XCTUnwrap(firedAt.first)
        XCTAssertGreaterThanOrEqual((firstFiring - startedAt) / 1_000_000, 49)
        timer.close()
        test.closeAndCheckForLeaks()
    }

    func testStoppedTimerDoesNotFire() throws {
        XCTAssertEqual(try firings(whenCancelledBy: { $0.stop() }), 0)
    }

    func testClosedTimerDoesNotFire() throws {
        XCTAssertEqual(try firings(whenCancelledBy: { $0.close() }), 0)
    }
}
