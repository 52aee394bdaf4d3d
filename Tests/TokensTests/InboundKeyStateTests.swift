import Crypto
import EventLoop
import JOSE
@testable import Tokens
import XCTest

/// When an inbound issuer's keys are fetched: on first need, on a kid they lack at most once per
/// `minimumRefetchSeconds` (tokens naming random kids cannot make the relay hammer the IdP), in
/// the background when an hour old; how many requests may wait; what a failure answers.
final class InboundKeyStateTests: XCTestCase {
    private static let keys = JWKSet(keys: [try! JWK(publicKey: PrivateKey.generate(.ecP256).publicKey, keyID: "k1")])

    func testTheFirstNeedStartsAFetchAndTheOthersWaitForIt() {
        var state = InboundKeyState()
        XCTAssertEqual(state.needKeys(at: 100), .fetchAndWait)
        XCTAssertTrue(state.isFetching)
        XCTAssertEqual(state.needKeys(at: 100.5), .wait)
        state.fetched(Self.keys, at: 101)
        XCTAssertFalse(state.isFetching)
        XCTAssertEqual(state.generation, 1)
        XCTAssertEqual(state.keys, Self.keys)
    }

    func testAnUnknownKidRefetchesAtMostOncePerInterval() {
        var state = InboundKeyState()
        _ = state.needKeys(at: 100)
        state.fetched(Self.keys, at: 100.2)
        var fetches = 0
        // A storm of made-up kids over 35 seconds, ten a second.
        for tick in 1...350 {
            let now = 100 + Double(tick) / 10
            switch state.needKeys(at: now) {
            case .fetchAndWait:
                fetches += 1
                state.fetched(Self.keys, at: now + 0.05)
            case .noSuchKey, .wait:
                break
            case .unavailable:
                XCTFail("the keys were read: a kid they lack is no such key")
            }
        }
        XCTAssertEqual(fetches, 3, "at 110, 120 and 130: one per minimumRefetchSeconds")
    }

    func testWithinTheIntervalAnUnknownKidIsNoSuchKey() {
        var state = InboundKeyState()
        _ = state.needKeys(at: 100)
        state.fetched(Self.keys, at: 100)
        XCTAssertEqual(state.needKeys(at: 109.9), .noSuchKey)
        XCTAssertEqual(state.needKeys(at: 110), .fetchAndWait)
    }

    func testAFailureAnswersUnavailableUntilTheIntervalIsOver() {
        var state = InboundKeyState()
        _ = state.needKeys(at: 100)
        state.fetchFailed("the JWKS answered HTTP 500")
        XCTAssertEqual(state.failure, "the JWKS answered HTTP 500")
        // The IdP's words stay in the log: a caller hears a fixed sentence.
        XCTAssertEqual(state.needKeys(at: 103.5), .unavailable(reason: "the issuer's keys could not be read lately", retryAfterSeconds: 7))
        XCTAssertEqual(state.needKeys(at: 109.99), .unavailable(reason: InboundKeyState.keysNotRead, retryAfterSeconds: 1))
        XCTAssertEqual(state.needKeys(at: 110), .fetchAndWait)
        state.fetched(Self.keys, at: 110.1)
        XCTAssertNil(state.failure)
    }

    func testAFailedRefetchKeepsTheKeysItHad() {
        var state = InboundKeyState()
        _ = state.needKeys(at: 100)
        state.fetched(Self.keys, at: 100)
        XCTAssertEqual(state.needKeys(at: 120), .fetchAndWait)
        state.fetchFailed("unreachable")
        XCTAssertEqual(state.keys, Self.keys, "tokens of the keys held still verify")
        XCTAssertEqual(state.needKeys(at: 121), .unavailable(reason: InboundKeyState.keysNotRead, retryAfterSeconds: 9),
                       "a new kid may be genuine: not refused as unknown while the IdP cannot say")
    }

    func testTheRequestsWaitingForOneFetchAreBounded() {
        var state = InboundKeyState()
        XCTAssertEqual(state.needKeys(at: 100), .fetchAndWait)
        for _ in 1..<InboundKeyState.maxWaitingRequests { XCTAssertEqual(state.needKeys(at: 100), .wait) }
        XCTAssertEqual(state.needKeys(at: 100),
                       .unavailable(reason: "too many requests are waiting for the issuer's keys", retryAfterSeconds: 1))
        state.fetched(Self.keys, at: 100.1)
        XCTAssertEqual(state.needKeys(at: 120), .fetchAndWait, "the count starts afresh with each fetch")
        XCTAssertEqual(state.needKeys(at: 120), .wait)
    }

    /// A parked request asks again each time its worker wakes (any token published wakes it):
    /// those asks are not more requests, so they do not fill the waiting room.
    func testAParkedRequestAskingAgainIsCountedOnce() {
        var state = InboundKeyState()
        XCTAssertEqual(state.needKeys(at: 100), .fetchAndWait)
        for _ in 0..<(2 * InboundKeyState.maxWaitingRequests) { XCTAssertEqual(state.needKeys(at: 100, firstAsk: false), .wait) }
        for _ in 1..<InboundKeyState.maxWaitingRequests { XCTAssertEqual(state.needKeys(at: 100), .wait) }
        XCTAssertEqual(state.needKeys(at: 100),
                       .unavailable(reason: "too many requests are waiting for the issuer's keys", retryAfterSeconds: 1))
        XCTAssertEqual(state.needKeys(at: 100, firstAsk: false), .wait, "one already waiting keeps waiting")
    }

    func testKeysAnHourOldAreReadAgainInTheBackground() {
        var state = InboundKeyState()
        _ = state.needKeys(at: 0)
        state.fetched(Self.keys, at: 0)
        XCTAssertFalse(state.refreshIfStale(at: 3_599))
        XCTAssertTrue(state.refreshIfStale(at: 3_600))
        XCTAssertFalse(state.refreshIfStale(at: 3_601), "one fetch")
        XCTAssertEqual(state.needKeys(at: 3_601), .wait)
    }

    func testARequestWhoseKeysAreOutdatedChecksAgainWithTheNewOnes() throws {
        let loop = try EventLoop()
        var wakes = 0
        let wakeup = LoopWakeup(loop: loop) { wakes += 1 }
        var posted = 0
        let inboxWakeup = LoopWakeup(loop: loop) { posted += 1 }
        let keys = InboundKeys(issuer: "https://idp.example.test", jwksUrl: nil, tlsSettings: nil, tls: nil,
                               inbox: TokenInbox(wakeup: inboxWakeup))
        let before = keys.snapshot(at: 100)
        XCTAssertNil(before.keys)
        guard case .wait = keys.need(after: before, at: 100, wakingOnResult: wakeup) else { return XCTFail("waits, a fetch posted") }
        keys.publish { $0.fetched(Self.keys, at: 100.1) }
        guard case .retry(let newer) = keys.need(after: before, at: 100.2, wakingOnResult: wakeup) else {
            return XCTFail("the keys came meanwhile: check again")
        }
        XCTAssertEqual(newer.keys, Self.keys)
        guard case .noSuchKey = keys.need(after: newer, at: 100.3, wakingOnResult: wakeup) else { return XCTFail("no such key") }
        for _ in 0..<5 { loop.runOnce(wait: false) }
        XCTAssertEqual(wakes, 1, "the waiting loop was woken by the fetch's end")
        XCTAssertEqual(posted, 1, "one fetch posted")
        wakeup.close()
        inboxWakeup.close()
        loop.runOnce(wait: false)
        try loop.close()
    }
}
