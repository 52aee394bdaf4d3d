import Endpoints
import EventLoop
import OAuth2
@testable import Tokens
import SafeText
import XCTest

/// The hand-off between a request that waits for a token and the fetch that ends its wait
/// (IdentityTokens.swift, steps 1 and 2). The interleavings are forced step by step on one
/// thread: what matters is the order of the calls, and each call is what one thread does
/// under the identity's lock.
final class TokenHandOffTests: XCTestCase {
    private func identity() -> Identity {
        Identity(name: "orders", tokenUrl: HTTPURL(scheme: .http, host: "127.0.0.1", port: 9, path: "/token"),
                 grant: .clientCredentials, clientAuth: .publicClient(id: "orders-relay"))
    }

    /// An identity whose first fetch is in flight.
    private func fetchingIdentity(file: StaticString = #filePath, line: UInt = #line) throws -> IdentityTokens {
        let tokens = IdentityTokens(identity: identity(), slot: 0)
        _ = try XCTUnwrap(tokens.update { $0.startFetchIfDue(at: 0) }, "no fetch started", file: file, line: line)
        return tokens
    }

    private func token(_ value: String) -> TokenResponse {
        TokenResponse(accessToken: Secret(value), expiresIn: 3600)
    }

    /// A worker's loop and the number of times it was woken.
    private final class WorkerLoop {
        let loop: EventLoop
        var wakes = 0
        private(set) var wakeup: LoopWakeup!

        init() throws {
            loop = try EventLoop()
            wakeup = LoopWakeup(loop: loop) { [unowned self] in wakes += 1 }
        }

        /// Runs the loop until it was woken `count` times in all, for at most 5 s.
        func runUntilWoken(_ count: Int, file: StaticString = #filePath, line: UInt = #line) {
            let deadline = EventLoop.monotonicNanoseconds() + 5_000_000_000
            while wakes < count && EventLoop.monotonicNanoseconds() < deadline { loop.runOnce(wait: false) }
            XCTAssertEqual(wakes, count, "wake-ups", file: file, line: line)
        }

        /// Runs what is ready now, and reports whether that woke the loop again.
        func runReady() {
            for _ in 0..<10 { loop.runOnce(wait: false) }
        }

        func close() throws {
            wakeup.close()
            loop.runOnce(wait: false)
            try loop.close()
        }
    }

    /// The interleaving that lost wake-ups: the fetch ends right after the request decided to
    /// wait, before the worker does anything else (before the fix, the worker registered its
    /// wake-up only then, under a second lock, and the result was published to nobody).
    func testAResultPublishedRightAfterADecisionToWaitWakesTheWaitingLoop() throws {
        let worker = try WorkerLoop()
        let tokens = try fetchingIdentity()

        XCTAssertEqual(tokens.decide(at: 0, wakingOnResult: worker.wakeup), .wait)
        tokens.publish { lifecycle in
            lifecycle.fetchSucceeded(token("at-1"), at: 0.1)
            return true
        }

        worker.runUntilWoken(1)
        guard case .inject(let injected) = tokens.decide(at: 0.2, wakingOnResult: worker.wakeup) else {
            return XCTFail("the woken request finds no token")
        }
        XCTAssertEqual(injected.value, "at-1")
        try worker.close()
    }

    /// The other order: the result comes first; the request that asks after it sees the token
    /// and registers nothing, so a later result wakes nobody.
    func testARequestAskingAfterTheResultInjectsAndIsNotRegistered() throws {
        let worker = try WorkerLoop()
        let tokens = try fetchingIdentity()
        tokens.publish { lifecycle in
            lifecycle.fetchSucceeded(token("at-1"), at: 0.1)
            return true
        }

        guard case .inject = tokens.decide(at: 0.2, wakingOnResult: worker.wakeup) else { return XCTFail("no token") }
        XCTAssertFalse(tokens.hasWaiters)
        tokens.publish { _ in true }
        worker.runReady()
        XCTAssertEqual(worker.wakes, 0)
        try worker.close()
    }

    func testEveryWaitingLoopIsWokenOnceByTheNextResultAndThenForgotten() throws {
        let first = try WorkerLoop(), second = try WorkerLoop()
        let tokens = try fetchingIdentity()
        for _ in 0..<3 { XCTAssertEqual(tokens.decide(at: 0, wakingOnResult: first.wakeup), .wait) }
        XCTAssertEqual(tokens.decide(at: 0, wakingOnResult: second.wakeup), .wait)
        let generation = tokens.generation

        tokens.publish { lifecycle in
            lifecycle.fetchFailed(.unreachable(reason: "connection refused"), at: 0.1)
            return true
        }
        first.runUntilWoken(1)
        second.runUntilWoken(1)
        XCTAssertGreaterThan(tokens.generation, generation)
        XCTAssertFalse(tokens.hasWaiters)

        tokens.publish { _ in true }
        first.runReady()
        XCTAssertEqual(first.wakes, 1, "a loop is woken by the one result it waited for")
        try first.close()
        try second.close()
    }

    func testAChangeThatRequestsNeedNotHearOfWakesNobody() throws {
        let worker = try WorkerLoop()
        let tokens = try fetchingIdentity()
        XCTAssertEqual(tokens.decide(at: 0, wakingOnResult: worker.wakeup), .wait)
        let generation = tokens.generation

        XCTAssertFalse(tokens.publish { _ in false })
        worker.runReady()
        XCTAssertEqual(worker.wakes, 0)
        XCTAssertEqual(tokens.generation, generation)
        XCTAssertTrue(tokens.hasWaiters, "still waiting for the result")
        try worker.close()
    }
}
