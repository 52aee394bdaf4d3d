@testable import Tokens
import XCTest

/// Each per-caller identity's callers' generation as one replica knows it: read once, shared by
/// the asks that come meanwhile, forgotten on a logout and when the link goes down.
final class CallerGenerationsTests: XCTestCase {
    private var generations = CallerGenerations<String>()

    func testOneReadServesEveryAskThenTheGenerationIsKept() {
        XCTAssertEqual(generations.ask(slot: 1, waiter: "a", link: .ready), .read(1))
        XCTAssertEqual(generations.ask(slot: 1, waiter: "b", link: .ready), .queued)
        XCTAssertEqual(generations.readDone(slot: 1, read: 1, generation: "g1"), ["a", "b"])
        XCTAssertEqual(generations.ask(slot: 1, waiter: "c", link: .ready), .use("g1"))
        XCTAssertEqual(generations.known(slot: 1), "g1")
        XCTAssertEqual(generations.ask(slot: 2, waiter: "d", link: .ready), .read(2), "each identity its own")
    }

    func testAFailedReadSendsItsAsksAloneAndKeepsNothing() {
        XCTAssertEqual(generations.ask(slot: 1, waiter: "a", link: .ready), .read(1))
        XCTAssertEqual(generations.readDone(slot: 1, read: 1, generation: nil), ["a"])
        XCTAssertNil(generations.known(slot: 1))
        XCTAssertEqual(generations.ask(slot: 1, waiter: "b", link: .ready), .read(2))
    }

    func testWithoutRedisAnAskGoesAlone() {
        XCTAssertEqual(generations.ask(slot: 1, waiter: "a", link: .down), .alone)
        XCTAssertNil(generations.known(slot: 1))
    }

    func testTheFirstConnectionIsWaitedForThenRead() {
        XCTAssertEqual(generations.ask(slot: 1, waiter: "a", link: .opening), .queued)
        XCTAssertEqual(generations.ask(slot: 1, waiter: "b", link: .opening), .queued)
        let reads = generations.linkReady()
        XCTAssertEqual(reads.map(\.slot), [1])
        XCTAssertEqual(generations.readDone(slot: 1, read: reads[0].read, generation: "g1"), ["a", "b"])
    }

    func testALostLinkSendsTheWaitersAloneAndForgetsWhatWasKnown() {
        XCTAssertEqual(generations.ask(slot: 1, waiter: "a", link: .ready), .read(1))
        _ = generations.readDone(slot: 1, read: 1, generation: "g1")
        XCTAssertEqual(generations.ask(slot: 2, waiter: "b", link: .ready), .read(2))
        XCTAssertEqual(generations.ask(slot: 3, waiter: "c", link: .opening), .queued)
        XCTAssertEqual(Set(generations.linkLost()), ["b", "c"])
        XCTAssertNil(generations.known(slot: 1), "a logout may pass unheard while the link is down")
        XCTAssertEqual(generations.readDone(slot: 2, read: 2, generation: "g2"), [], "the read's answer comes too late")
        XCTAssertNil(generations.known(slot: 2))
    }

    /// A logout forgets the generation; a read under way may answer with the one the logout
    /// replaced: its asks ask again, and its answer is dropped.
    func testALogoutForgetsTheGenerationAndMakesAReadUnderWayStale() {
        XCTAssertEqual(generations.ask(slot: 1, waiter: "a", link: .ready), .read(1))
        _ = generations.readDone(slot: 1, read: 1, generation: "g1")
        XCTAssertEqual(generations.forget(slot: 1), [])
        XCTAssertEqual(generations.ask(slot: 1, waiter: "b", link: .ready), .read(2))
        XCTAssertEqual(generations.forget(slot: 1), ["b"])
        XCTAssertEqual(generations.ask(slot: 1, waiter: "b", link: .ready), .read(3))
        XCTAssertEqual(generations.readDone(slot: 1, read: 2, generation: "g1"), [], "the stale read")
        XCTAssertNil(generations.known(slot: 1))
        XCTAssertEqual(generations.readDone(slot: 1, read: 3, generation: "g2"), ["b"])
        XCTAssertEqual(generations.known(slot: 1), "g2")
    }

    func testARetiredSlotKeepsNothingButItsReadStillAnswers() {
        XCTAssertEqual(generations.ask(slot: 1, waiter: "a", link: .ready), .read(1))
        _ = generations.readDone(slot: 1, read: 1, generation: "g1")
        generations.retire(slot: 1)
        XCTAssertNil(generations.known(slot: 1))
        XCTAssertEqual(generations.ask(slot: 2, waiter: "b", link: .ready), .read(2))
        generations.retire(slot: 2)
        XCTAssertEqual(generations.readDone(slot: 2, read: 2, generation: "g2"), ["b"])
    }
}
