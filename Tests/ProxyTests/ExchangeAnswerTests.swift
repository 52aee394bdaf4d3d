import HTTP1
@testable import Proxy
import XCTest

/// The exchange's token waits, replays after a refused token, and the answers the relay gives
/// itself, driven without a socket.
final class ExchangeAnswerTests: XCTestCase {
    private let get = head("GET /orders/1 HTTP/1.1", "Host: relay")
    private let unauthorized = head("HTTP/1.1 401 Unauthorized", "Content-Length: 0")
    private let withIdentity = ExchangeDriver.plan(identity: "svc")

    // MARK: Tokens

    func testRequestCarriesAReadyToken() {
        var driver = ExchangeDriver()
        XCTAssertTrue(isForward(driver.request(get, on: withIdentity, token: .inject(ExchangeDriver.token("t1")))))
        XCTAssertEqual(driver.exchange.token?.value, "t1")
        XCTAssertFalse(driver.exchange.isReplay)
    }

    func testRequestWithABodyWaitsForItsTokenWithTheParserPaused() {
        var driver = ExchangeDriver()
        guard case .waitForToken(pauseParser: true) = driver.request(head("POST / HTTP/1.1", "Host: a", "Content-Length: 3"),
                                                                    on: withIdentity, token: .wait) else {
            return XCTFail("parked, the body unparsed")
        }
        XCTAssertEqual(driver.exchange.expiredDeadline, .tokenWait)
        guard case .keepWaiting = driver.exchange.tokenLookedUp(.wait) else { return XCTFail("another fetch: wait on") }
        guard case .forward(resumeParser: true) = driver.exchange.tokenLookedUp(.inject(ExchangeDriver.token("t1"))) else {
            return XCTFail("forwarded, the body parsed on")
        }
        XCTAssertEqual(driver.exchange.token?.value, "t1")
    }

    func testRequestWithoutABodyWaitsForItsTokenWithoutPausing() {
        var driver = ExchangeDriver()
        guard case .waitForToken(pauseParser: false) = driver.request(get, on: withIdentity, token: .wait) else {
            return XCTFail("parked")
        }
        driver.requestEnds()
        guard case .forward(resumeParser: false) = driver.exchange.tokenLookedUp(.inject(ExchangeDriver.token("t1"))) else {
            return XCTFail("forwarded")
        }
    }

    func testTokenFailureIsAnsweredWithTheIdentityProblem() {
        var driver = ExchangeDriver()
        let problem = answered(driver.request(get, on: withIdentity, token: .fail(ExchangeDriver.unavailable())))
        XCTAssertEqual(problem?.status, 503)
        XCTAssertEqual(problem?.route, "orders")
        XCTAssertTrue(problem?.extraHeaders.contains { $0.0 == "Retry-After" } == true)
        XCTAssertTrue(driver.exchange.keepAlive, "no body is pending: the connection stays")
        XCTAssertFalse(driver.exchange.forwardsRequestBody)
    }

    func testTokenWaitExpiryAnswers503WithRetryAfter() {
        var driver = ExchangeDriver()
        _ = driver.request(head("POST / HTTP/1.1", "Host: a", "Content-Length: 3"), on: withIdentity, token: .wait)
        guard case .answer(let problem, resumeParser: true)? = driver.exchange.tokenWaitExpired(tokenWaitSeconds: 30) else {
            return XCTFail("answered")
        }
        XCTAssertEqual(problem.status, 503)
        XCTAssertTrue(problem.detail.contains("tokenWaitSeconds"))
        XCTAssertFalse(driver.exchange.keepAlive, "the unread body ends the connection")
        XCTAssertNil(driver.exchange.tokenWaitExpired(tokenWaitSeconds: 30), "once")
    }

    // MARK: Replay after a refused token

    func testRefusedTokenReplaysTheRequestOnceWithANewToken() {
        var driver = ExchangeDriver()
        _ = driver.request(get, on: withIdentity, token: .inject(ExchangeDriver.token("old")))
        driver.requestEnds()
        guard case .reportRefusedToken(let refused) = driver.exchange.responseHead(parsedHead(unauthorized, kind: .response)) else {
            return XCTFail("the refusal is reported")
        }
        XCTAssertEqual(refused.value, "old")
        guard case .discard = driver.exchange.refusalReported(kept: false, head: parsedHead(unauthorized, kind: .response)) else {
            return XCTFail("the answer is dropped")
        }
        XCTAssertFalse(driver.exchange.releaseHead(), "nothing of it reaches the client")
        guard case .drop = driver.exchange.responseBody(10) else { return XCTFail("dropped") }
        guard case (.refused, .replay) = driver.responseEnds() else { return XCTFail("replayed") }
        XCTAssertTrue(driver.exchange.isWaitingForToken)
        guard case .forward(resumeParser: false) = driver.exchange.tokenLookedUp(.inject(ExchangeDriver.token("new"))) else {
            return XCTFail("sent again")
        }
        XCTAssertTrue(driver.exchange.isReplay)
        XCTAssertEqual(driver.exchange.token?.value, "new")
        XCTAssertEqual(respondFraming(driver.response(unauthorized)), .contentLength, "a second refusal goes to the client")
        XCTAssertEqual(driver.exchange.current.record.status, 401)
    }

    func testRefusalOfATokenKeptForItsMinimumAgeGoesToTheClient() {
        var driver = ExchangeDriver()
        _ = driver.request(get, on: withIdentity, token: .inject(ExchangeDriver.token("young")))
        driver.requestEnds()
        XCTAssertEqual(respondFraming(driver.response(unauthorized, refusalKept: true)), .contentLength,
                       "minTokenAgeForRetrySeconds: no replay, no new fetch")
    }

    func testStatusesOutsideRetryOnStatusAreNotReplayed() {
        var driver = ExchangeDriver()
        _ = driver.request(get, on: withIdentity, token: .inject(ExchangeDriver.token("t")))
        driver.requestEnds()
        XCTAssertEqual(respondFraming(driver.response(head("HTTP/1.1 403 Forbidden", "Content-Length: 0"))), .contentLength)
    }

    func testRouteWithoutAnIdentityNeverReplays() {
        var driver = ExchangeDriver()
        _ = driver.request(get)
        driver.requestEnds()
        XCTAssertEqual(respondFraming(driver.response(unauthorized)), .contentLength)
    }

    func testBodyWithinTheReplayLimitIsKeptAndReplayed() {
        var driver = ExchangeDriver()
        _ = driver.request(head("POST / HTTP/1.1", "Host: a", "Content-Length: 5"), on: withIdentity,
                           token: .inject(ExchangeDriver.token("t")))
        XCTAssertEqual(driver.exchange.sentRequestBody(5), .keep)
        driver.requestEnds()
        guard case .discard = driver.response(unauthorized) else { return XCTFail("replayed with its kept body") }
    }

    func testBodyPastTheReplayLimitIsNotKeptAndNotReplayed() {
        var driver = ExchangeDriver()
        _ = driver.request(head("POST / HTTP/1.1", "Host: a", "Transfer-Encoding: chunked"), on: withIdentity,
                           token: .inject(ExchangeDriver.token("t")))
        XCTAssertEqual(driver.exchange.sentRequestBody(Exchange.maxReplayBodyBytes), .keep)
        XCTAssertEqual(driver.exchange.sentRequestBody(1), .dropKept)
        XCTAssertEqual(driver.exchange.sentRequestBody(1), Exchange.BodyKeeping.none)
        driver.requestEnds()
        XCTAssertEqual(respondFraming(driver.response(unauthorized)), .contentLength)
    }

    func testDeclaredLengthPastTheReplayLimitIsNeverKept() {
        var driver = ExchangeDriver()
        _ = driver.request(head("POST / HTTP/1.1", "Host: a", "Content-Length: \(Exchange.maxReplayBodyBytes + 1)"),
                           on: withIdentity, token: .inject(ExchangeDriver.token("t")))
        XCTAssertEqual(driver.exchange.sentRequestBody(10), Exchange.BodyKeeping.none)
    }

    // MARK: Error answers

    func testNoRouteIs404AndKeepsTheConnection() {
        var driver = ExchangeDriver()
        XCTAssertEqual(answered(driver.refusedRequest(get, .noRoute(), closing: false))?.status, 404)
        XCTAssertTrue(driver.exchange.keepAlive)
        driver.requestEnds()
        XCTAssertTrue(driver.exchange.isFinished)
    }

    func testBadTargetIs400AndClosesTheConnection() {
        var driver = ExchangeDriver()
        XCTAssertEqual(answered(driver.refusedRequest(get, .badRequest("bad target"), closing: true))?.status, 400)
        XCTAssertFalse(driver.exchange.keepAlive)
    }

    func testLocalAnswerWithABodyStillToComeClosesTheConnection() {
        var driver = ExchangeDriver()
        _ = answered(driver.refusedRequest(head("POST / HTTP/1.1", "Host: a", "Content-Length: 9"), .noRoute(), closing: false))
        XCTAssertFalse(driver.exchange.keepAlive)
        guard case .discarded = driver.requestEnds() else { return XCTFail("the body is not forwarded") }
    }

    func testUpstreamFailureBeforeTheResponseIsAnsweredWithItsProblem() {
        var driver = ExchangeDriver()
        _ = driver.request(get)
        driver.requestEnds()
        guard case .answer(let problem, close: false) = driver.exchange.upstreamFailed(.connectTimeout, reused: false,
                                                                                      receivedResponseBytes: false) else {
            return XCTFail("answered")
        }
        XCTAssertEqual(problem.status, 504)
        XCTAssertTrue(driver.exchange.isFinished)
    }

    func testQueueWaitForAnUpstreamConnectionSlotExpiringIs503UpstreamBusy() {
        var driver = ExchangeDriver()
        _ = driver.request(get)
        driver.requestEnds()
        guard case .answer(let problem, close: false) = driver.exchange.upstreamFailed(.queueTimeout, reused: false,
                                                                                      receivedResponseBytes: false) else {
            return XCTFail("answered, not queued again on a fresh connection")
        }
        XCTAssertEqual(problem.status, 503)
        XCTAssertEqual(problem.slug, "upstream-busy")
        XCTAssertTrue(problem.extraHeaders.contains { $0.0 == "Retry-After" })
        XCTAssertTrue(driver.exchange.keepAlive, "the request was complete: the connection stays")
    }

    func testClosedReusedConnectionIsRetriedOnceOnAFreshOne() {
        var driver = ExchangeDriver()
        _ = driver.request(get)
        driver.requestEnds()
        guard case .retryOnFreshConnection = driver.exchange.upstreamFailed(.closed(nil), reused: true, receivedResponseBytes: false) else {
            return XCTFail("retried")
        }
        guard case .answer(let problem, _) = driver.exchange.upstreamFailed(.closed(nil), reused: true, receivedResponseBytes: false) else {
            return XCTFail("once")
        }
        XCTAssertEqual(problem.status, 502)
    }

    func testUpstreamFailureAfterTheResponseHeadClosesAtOnce() {
        var driver = ExchangeDriver()
        _ = driver.request(get)
        driver.requestEnds()
        _ = driver.response(head("HTTP/1.1 200 OK", "Content-Length: 50"))
        _ = driver.exchange.releaseHead()
        guard case .closeNow = driver.exchange.upstreamFailed(.closed(nil), reused: false, receivedResponseBytes: true) else {
            return XCTFail("the client learns of it by the close")
        }
    }

    func testMalformedRequestBeforeAHeadIsCountedAnsweredAndCloses() {
        var exchange = Exchange()
        _ = exchange.readingStarts()
        guard case .answer(let problem, counted: true, abortUpstream: false) = exchange.requestRejected(
            HTTP1Error(.headTooLarge, "too large")) else { return XCTFail("answered") }
        XCTAssertEqual(problem.status, 431)
        XCTAssertFalse(exchange.keepAlive)
    }

    func testARequestRejectedAfterAHeadIsAnsweredWithItsBody() {
        var driver = ExchangeDriver()
        _ = driver.request(head("HEAD /a HTTP/1.1", "Host: a"))
        driver.requestEnds()
        _ = driver.response(head("HTTP/1.1 200 OK", "Content-Length: 5"))
        _ = driver.responseEnds()
        XCTAssertTrue(driver.exchange.nextRequest(draining: false))
        _ = driver.exchange.readingStarts()
        guard case .answer(let problem, counted: true, abortUpstream: false) = driver.exchange.requestRejected(
            HTTP1Error(.malformed, "bad")) else { return XCTFail("answered") }
        XCTAssertEqual(problem.status, 400)
        XCTAssertFalse(driver.exchange.current.request.isHead, "the 400 carries its body: it answers no HEAD")
        XCTAssertEqual(driver.exchange.headerTimedOut().status, 408)
        XCTAssertFalse(driver.exchange.current.request.isHead)
    }

    func testMalformedBodyMidExchangeDropsTheUpstreamConnection() {
        var driver = ExchangeDriver()
        _ = driver.request(head("POST / HTTP/1.1", "Host: a", "Transfer-Encoding: chunked"))
        guard case .answer(let problem, counted: false, abortUpstream: true) = driver.exchange.requestRejected(
            HTTP1Error(.malformed, "bad chunk")) else { return XCTFail("answered") }
        XCTAssertEqual(problem.status, 400)
        guard case .closeAfterResponse = driver.exchange.requestRejected(HTTP1Error(.malformed, "again")) else {
            return XCTFail("answered once")
        }
    }

    func testHeadTimeoutIs408AndIdleTimeoutClosesQuietly() {
        var exchange = Exchange()
        XCTAssertEqual(exchange.expiredDeadline, .idle)
        _ = exchange.readingStarts()
        XCTAssertEqual(exchange.expiredDeadline, .header)
        XCTAssertEqual(exchange.headerTimedOut().status, 408)
        XCTAssertFalse(exchange.keepAlive)
    }

    func testStalledBodyIs408UnlessTheResponseBegan() {
        var driver = ExchangeDriver()
        _ = driver.request(head("POST / HTTP/1.1", "Host: a", "Content-Length: 100"))
        guard case .answer(let problem) = driver.exchange.requestBodyTimedOut() else { return XCTFail("408") }
        XCTAssertEqual(problem.status, 408)

        var started = ExchangeDriver()
        _ = started.request(head("POST / HTTP/1.1", "Host: a", "Content-Length: 100"))
        _ = started.response(head("HTTP/1.1 200 OK", "Content-Length: 5"))
        _ = started.exchange.releaseHead()
        guard case .closeNow = started.exchange.requestBodyTimedOut() else { return XCTFail("too late for an answer") }
    }

    func testClientHalfCloseAfterACompleteRequestIsAnsweredThenClosed() {
        var driver = ExchangeDriver()
        _ = driver.request(get)
        driver.requestEnds()
        guard case .answerThenClose = driver.exchange.clientEnded(cleanly: true) else { return XCTFail("answered") }
        XCTAssertFalse(driver.exchange.keepAlive)
        var idle = Exchange()
        guard case .close = idle.clientEnded(cleanly: true) else { return XCTFail("idle: closed") }
    }
}
