// The leak check every test of an event-loop user ends with (EventLoopTests, RedisClientTests):
// a test-only library, so the check is written once.

import EventLoop
import XCTest

/// A loop for one test. Every wait on it is bounded, and `closeAndCheckForLeaks()` ends the
/// test the way libuv's own tests end: every handle closed, the loop run until it returns,
/// no handle left open and `close()` of the loop succeeding.
public final class LeakCheckedLoop {
    public let loop: EventLoop

    public init() throws {
        // As the relay does at start (RunCommand): a write to a peer the test closed or reset must
        // fail with EPIPE, not end the test process with SIGPIPE (it did once, in a Redis cluster
        // test's fake node under load, `make test-asan` of 2026-11-27).
        SignalWatcher.ignoreBrokenPipe()
        loop = try EventLoop()
    }

    /// Runs the loop until `done()` holds (`what` says what that means, for the failure);
    /// fails the test when it does not within `seconds`.
    public func run(until what: String, seconds: UInt64 = 5, file: StaticString = #filePath, line: UInt = #line,
                    _ done: () -> Bool) {
        var timedOut = false
        let deadline = LoopTimer(loop: loop) { timedOut = true }
        deadline.start(afterMilliseconds: seconds * 1000)
        while !done() && !timedOut {
            loop.runOnce(wait: true)
        }
        deadline.close()
        if timedOut { XCTFail("timed out after \(seconds) s waiting until \(what)", file: file, line: line) }
    }

    /// Runs the loop for `milliseconds`, for checking that something does not happen.
    public func run(forMilliseconds milliseconds: UInt64) {
        var elapsed = false
        let timer = LoopTimer(loop: loop) { elapsed = true }
        timer.start(afterMilliseconds: milliseconds)
        while !elapsed {
            loop.runOnce(wait: true)
        }
        timer.close()
    }

    /// The end of every test, after it closed its handles: runs the loop until it returns
    /// (failing if a handle keeps it running) and checks that nothing is left open.
    public func closeAndCheckForLeaks(file: StaticString = #filePath, line: UInt = #line) {
        var stuck = false
        let watchdog = LoopTimer(loop: loop) { [loop] in
            stuck = true
            loop.stop()
        }
        // Unreferenced, the watchdog does not keep the loop running on its own.
        watchdog.unref()
        watchdog.start(afterMilliseconds: 5000)
        loop.run()
        watchdog.close()
        loop.runOnce(wait: false)
        XCTAssertFalse(stuck, "the loop was still running after 5 s: a handle was left active", file: file, line: line)
        XCTAssertEqual(loop.openHandles, 0, "handles left open", file: file, line: line)
        XCTAssertNoThrow(try loop.close(), "uv_loop_close", file: file, line: line)
    }
}
