import Crypto
@testable import Proxy
import Tokens
import XCTest

/// Where a client connection's exchange keeps the state of its request: in a slot lent with its
/// workspace, so that an idle connection holds none of it (issue 25).
final class ExchangeSlotTests: XCTestCase {
    func testARequestsStateGoesToTheLentSlotAndTheBlankStaysBlank() {
        let blank = CurrentExchangeSlot()
        let lent = CurrentExchangeSlot()
        var exchange = Exchange(blank: blank)
        exchange.keepCurrent(in: lent.pointer, writable: true)
        exchange.headParsed(parsedHead("HEAD /a HTTP/1.1\r\nHost: a\r\n\r\n"), keepAlive: true, startedAt: 7)

        XCTAssertEqual(lent.pointer.pointee.record.startedAt, 7)
        XCTAssertTrue(lent.pointer.pointee.request.isHead)
        XCTAssertEqual(blank.pointer.pointee.record.startedAt, 0, "the blank stays blank")
        XCTAssertFalse(blank.pointer.pointee.request.isHead)
    }

    func testWithoutItsWorkspaceAConnectionReadsTheBlankAndKeepsItsOwnState() {
        let blank = CurrentExchangeSlot()
        let lent = CurrentExchangeSlot()
        var exchange = Exchange(blank: blank)
        exchange.keepCurrent(in: lent.pointer, writable: true)
        exchange.headParsed(parsedHead("HEAD /a HTTP/1.1\r\nHost: a\r\n\r\n"), keepAlive: false, startedAt: 7)
        exchange.keepCurrent(in: blank.pointer, writable: false)

        XCTAssertEqual(exchange.current.record.startedAt, 0)
        XCTAssertFalse(exchange.current.request.isHead)
        XCTAssertEqual(exchange.phase, .exchanging, "the connection's own state stays with it")
        XCTAssertEqual(exchange.exchangesStarted, 1)
        XCTAssertFalse(exchange.keepAlive)
    }

    /// Every client connection holds an `Exchange`, idle or not: without the request's state it
    /// is a few words (it was 304 bytes with it).
    func testAnExchangeWithoutItsRequestStateIsFourWords() {
        XCTAssertLessThanOrEqual(MemoryLayout<Exchange>.size, 32)
    }

    func testASlotResetIsBlankAgain() {
        let slot = CurrentExchangeSlot()
        var exchange = Exchange(blank: CurrentExchangeSlot())
        exchange.keepCurrent(in: slot.pointer, writable: true)
        exchange.headParsed(parsedHead("GET /a HTTP/1.1\r\nHost: a\r\n\r\n"), keepAlive: true, startedAt: 7)
        slot.reset()
        XCTAssertEqual(slot.pointer.pointee.record.startedAt, 0)
    }

    /// A finished exchange's slot goes back with its workspace, which the next client's
    /// connection may be lent before a head replaces the state: the tokens go at the end.
    func testAFinishedExchangeLetsGoOfItsTokens() {
        let slot = CurrentExchangeSlot()
        var exchange = Exchange(blank: CurrentExchangeSlot())
        exchange.keepCurrent(in: slot.pointer, writable: true)
        exchange.headParsed(parsedHead("GET /a HTTP/1.1\r\nHost: a\r\n\r\n"), keepAlive: true, startedAt: 7)
        exchange.current.credential = .carried(ExchangeDriver.token("upstream-token"))
        exchange.current.uncheckedCaller = CallerToken(value: "caller-token", digest: SHA256.hash(Array("caller-token".utf8)), expiresAt: nil)

        XCTAssertTrue(exchange.nextRequest(draining: false))

        guard case .none = slot.pointer.pointee.credential else { return XCTFail("the upstream token is still held") }
        XCTAssertNil(slot.pointer.pointee.uncheckedCallerBox, "the caller's token is still held")
        guard case .notRequired = slot.pointer.pointee.caller else { return XCTFail("the caller check is still held") }
    }

    /// On a route with `inbound`, the caller the route admitted goes at the end too: the slot
    /// no longer refers to it, and nothing else keeps it.
    func testAFinishedExchangeLetsGoOfItsCheckedCaller() {
        let slot = CurrentExchangeSlot()
        var exchange = Exchange(blank: CurrentExchangeSlot())
        exchange.keepCurrent(in: slot.pointer, writable: true)
        exchange.headParsed(parsedHead("GET /a HTTP/1.1\r\nHost: a\r\n\r\n"), keepAlive: true, startedAt: 7)
        weak var admitted: CheckedCaller?
        do {
            let caller = CheckedCaller(token: CallerToken(value: "t", digest: SHA256.hash(Array("t".utf8)), expiresAt: 2_000),
                                       standing: .admitted, claimLines: [], validUntil: 2_060)
            admitted = caller
            exchange.current.caller = .admitted(caller)
        }

        XCTAssertTrue(exchange.nextRequest(draining: false))

        guard case .notRequired = slot.pointer.pointee.caller else { return XCTFail("the caller check is still held") }
        XCTAssertNil(admitted, "the admitted caller is still referred to")
    }
}
