@testable import EventLoop
import LoopTestSupport
import XCTest

final class DeadlineTimerTests: XCTestCase {
    func testTimersFireInTheOrderOfTheirDeadlinesNotOfArming() throws {
        let test = try LeakCheckedLoop()
        var fired: [Int] = []
        let delays: [UInt64] = [60, 20, 100, 40, 80]
        let timers = delays.indices.map { index in DeadlineTimer(loop: test.loop) { fired.append(index) } }
        for (timer, delay) in zip(timers, delays) { timer.arm(afterMilliseconds: delay) }
        XCTAssertEqual(test.loop.deadlines.count, 5)

        test.run(until: "every timer fired") { fired.count == 5 }

        XCTAssertEqual(fired, [1, 3, 0, 4, 2])
        XCTAssertEqual(test.loop.deadlines.count, 0)
        for timer in timers { timer.close() }
        test.closeAndCheckForLeaks()
    }

    func testRearmingLaterPostponesTheCallback() throws {
        let test = try LeakCheckedLoop()
        var firedAt: UInt64?
        let timer = DeadlineTimer(loop: test.loop) { firedAt = EventLoop.monotonicNanoseconds() }
        test.loop.runOnce(wait: false)
        let start = EventLoop.monotonicNanoseconds()
        timer.arm(afterMilliseconds: 20)
        timer.arm(afterMilliseconds: 120)

        test.run(until: "the timer fired") { firedAt != nil }

        XCTAssertGreaterThanOrEqual((try XCTUnwrap(firedAt) - start) / 1_000_000, 119)
        timer.close()
        test.closeAndCheckForLeaks()
    }

    func testRearmingEarlierBringsTheCallbackForward() throws {
        let test = try LeakCheckedLoop()
        var fired = 0
        let timer = DeadlineTimer(loop: test.loop) { fired += 1 }
        timer.arm(afterMilliseconds: 4000)
        timer.arm(afterMilliseconds: 20)

        test.run(until: "the timer fired", seconds: 2) { fired == 1 }

        timer.close()
        test.closeAndCheckForLeaks()
    }

    func testDisarmedTimerDoesNotFire() throws {
        let test = try LeakCheckedLoop()
        var fired = 0
        let timer = DeadlineTimer(loop: test.loop) { fired += 1 }
        timer.arm(afterMilliseconds: 20)
        timer.disarm()
        test.run(forMilliseconds: 80)

        XCTAssertEqual(fired, 0)
        timer.close()
        test.closeAndCheckForLeaks()
    }

    /// Every client connection holds a timer: it stays in malloc's 80-byte size class (issue 25).
    func testATimerTakesAtMost80BytesOfHeap() throws {
        let test = try LeakCheckedLoop()
        let timer = DeadlineTimer(loop: test.loop)
        XCTAssertLessThanOrEqual(heapBytes(of: timer), 80)
        timer.close()
        test.closeAndCheckForLeaks()
    }

    /// A closed timer leaves the queue at once: the loop does not run on until its deadline.
    func testClosingTheLastTimerLeavesNoHandleOpen() throws {
        let test = try LeakCheckedLoop()
        var fired = 0
        let first = DeadlineTimer(loop: test.loop) { fired += 1 }
        let second = DeadlineTimer(loop: test.loop) { fired += 1 }
        first.arm(afterMilliseconds: 60_000)
        second.arm(afterMilliseconds: 30_000)
        XCTAssertEqual(test.loop.openHandles, 1, "one libuv timer for both deadlines")
        second.close()
        first.close()

        XCTAssertEqual(test.loop.deadlines.count, 0)
        XCTAssertEqual(fired, 0)
        test.closeAndCheckForLeaks()
    }

    /// A callback may close another timer that is due at the same time, and arm its own again.
    func testCallbacksMayCloseOtherTimersAndRearmTheirOwn() throws {
        let test = try LeakCheckedLoop()
        var events: [String] = []
        let victim = DeadlineTimer(loop: test.loop) { events.append("victim") }
        let rearming = DeadlineTimer(loop: test.loop)
        var rearmings = 0
        rearming.whenExpired { [unowned rearming] in
            events.append("rearming")
            rearmings += 1
            if rearmings == 1 { rearming.arm(afterMilliseconds: 10) }
        }
        let closer = DeadlineTimer(loop: test.loop) {
            events.append("closer")
            victim.close()
        }
        closer.arm(afterMilliseconds: 10)
        rearming.arm(afterMilliseconds: 30)
        victim.arm(afterMilliseconds: 30)

        test.run(until: "the rearmed timer fired twice") { rearmings == 2 }

        XCTAssertEqual(events, ["closer", "rearming", "rearming"])
        for timer in [victim, rearming, closer] { timer.close() }
        test.closeAndCheckForLeaks()
    }

    /// Many timers armed and closed in any order keep the heap consistent.
    func testHeapStaysOrderedThroughRemovals() throws {
        let test = try LeakCheckedLoop()
        var fired: [UInt64] = []
        var generator = SystemRandomNumberGenerator()
        let delays = (0..<200).map { _ in UInt64.random(in: 10...150, using: &generator) }
        let timers = delays.map { delay in DeadlineTimer(loop: test.loop) { fired.append(delay) } }
        for (timer, delay) in zip(timers, delays) { timer.arm(afterMilliseconds: delay) }
        for index in stride(from: 0, to: timers.count, by: 3) { timers[index].close() }
        let expected = delays.indices.filter { $0 % 3 != 0 }.map { delays[$0] }

        test.run(until: "the remaining timers fired") { fired.count == expected.count }

        XCTAssertEqual(fired, fired.sorted(), "callbacks in the order of their deadlines")
        XCTAssertEqual(fired.sorted(), expected.sorted())
        for timer in timers { timer.close() }
        test.closeAndCheckForLeaks()
    }
}
