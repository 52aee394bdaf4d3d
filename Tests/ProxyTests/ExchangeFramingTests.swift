import HTTP1
@testable import Proxy
import XCTest

/// The exchange's framing, keep-alive, pipelining, 100-continue and upgrade decisions, driven
/// without a socket.
final class ExchangeFramingTests: XCTestCase {
    private let get = head("GET /orders/1 HTTP/1.1", "Host: relay")
    private let ok = head("HTTP/1.1 200 OK", "Content-Length: 5")

    // MARK: Framing

    func testResponseWithALengthKeepsItAndTheConnection() {
        var driver = ExchangeDriver()
        XCTAssertTrue(isForward(driver.request(get)))
        guard case .forwarded(lastChunk: false) = driver.requestEnds() else { return XCTFail("the end is forwarded") }
        XCTAssertEqual(respondFraming(driver.response(ok)), .contentLength)
        XCTAssertTrue(driver.exchange.keepAlive)
        XCTAssertTrue(driver.exchange.releaseHead())
        XCTAssertFalse(driver.exchange.releaseHead(), "the held head is sent once")
        guard case .write = driver.exchange.responseBody(5) else { return XCTFail("the body is written as it came") }
        guard case (.complete(.none), .finish) = driver.responseEnds() else { return XCTFail("complete") }
        XCTAssertEqual(driver.exchange.current.record.status, 200)
        XCTAssertEqual(driver.exchange.current.record.bodyBytesSent, 5)
    }

    func testResponseWithoutALengthIsChunkedForAnHTTP11Client() {
        var driver = ExchangeDriver()
        _ = driver.request(get)
        driver.requestEnds()
        XCTAssertEqual(respondFraming(driver.response(head("HTTP/1.1 200 OK", "Connection: close"))), .chunked)
        _ = driver.exchange.releaseHead()
        guard case .writeAsChunk = driver.exchange.responseBody(3) else { return XCTFail("the relay chunks the body") }
        guard case (.complete(.empty), .finish) = driver.responseEnds() else { return XCTFail("an empty last chunk") }
        XCTAssertTrue(driver.exchange.keepAlive)
    }

    func testResponseWithoutALengthEndsTheConnectionForAnHTTP10Client() {
        var driver = ExchangeDriver()
        _ = driver.request(head("GET / HTTP/1.0", "Connection: keep-alive"))
        driver.requestEnds()
        XCTAssertEqual(respondFraming(driver.response(head("HTTP/1.1 200 OK", "Connection: close"))), .close)
        XCTAssertFalse(driver.exchange.keepAlive)
        guard case (.complete(.none), .close(upstreamReusable: true)) = driver.responseEnds() else {
            return XCTFail("the close delimits the body")
        }
    }

    func testChunkedUpstreamBodyKeepsItsChunksAndTrailers() {
        var driver = ExchangeDriver()
        _ = driver.request(get)
        driver.requestEnds()
        XCTAssertEqual(respondFraming(driver.response(head("HTTP/1.1 200 OK", "Transfer-Encoding: chunked"))), .chunked)
        XCTAssertTrue(driver.exchange.relaysChunks)
        _ = driver.exchange.releaseHead()
        guard case .write = driver.exchange.responseBody(4) else { return XCTFail("chunk data is written as it came") }
        guard case (.complete(.upstreamTrailers), .finish) = driver.responseEnds() else { return XCTFail("trailers") }
    }

    func testHeadAnd204And304ResponsesHaveNoBody() {
        for (request, response) in [(head("HEAD / HTTP/1.1", "Host: a"), ok),
                                    (get, head("HTTP/1.1 204 No Content")),
                                    (get, head("HTTP/1.1 304 Not Modified", "Content-Length: 10"))] {
            var driver = ExchangeDriver()
            _ = driver.request(request)
            driver.requestEnds()
            XCTAssertEqual(respondFraming(driver.response(response)), ForwardedHead.Framing.none)
        }
    }

    func testChunkedRequestEndsWithALastChunkUpstream() {
        var driver = ExchangeDriver()
        _ = driver.request(head("POST /orders HTTP/1.1", "Host: a", "Transfer-Encoding: chunked"))
        XCTAssertTrue(driver.exchange.current.request.hasBody)
        XCTAssertEqual(driver.exchange.current.request.framing, .chunked)
        guard case .forwarded(lastChunk: true) = driver.requestEnds() else { return XCTFail("the last chunk goes upstream") }
    }

    // MARK: Keep-alive and pipelining

    func testFinishedExchangeWaitsForTheNextPipelinedRequest() {
        var driver = ExchangeDriver()
        _ = driver.request(get)
        XCTAssertTrue(driver.exchange.pausesParserAtRequestEnd, "pipelined requests wait for this response")
        driver.requestEnds()
        XCTAssertFalse(driver.exchange.isFinished, "the response is still to come")
        _ = driver.response(ok)
        _ = driver.responseEnds()
        XCTAssertTrue(driver.exchange.isFinished)
        XCTAssertTrue(driver.exchange.nextRequest(draining: false))
        XCTAssertEqual(driver.exchange.phase, .awaitingRequest)
        XCTAssertNil(driver.exchange.current.plan)
        XCTAssertEqual(driver.exchange.expiredDeadline, .idle)
        XCTAssertTrue(driver.exchange.readingStarts())
        XCTAssertTrue(driver.exchange.needsHeaderDeadline(headStarted: true), "a second head gets its own deadline")
    }

    func testConnectionCloseOrDrainingEndsTheConnectionAfterTheExchange() {
        for (request, draining) in [(head("GET / HTTP/1.1", "Host: a", "Connection: close"), false), (get, true)] {
            var driver = ExchangeDriver()
            _ = driver.request(request, draining: draining)
            driver.requestEnds()
            _ = driver.response(ok)
            _ = driver.responseEnds()
            XCTAssertFalse(driver.exchange.nextRequest(draining: draining))
            XCTAssertTrue(driver.exchange.closesAfterResponse())
            XCTAssertFalse(driver.exchange.closesAfterResponse(), "once")
        }
    }

    /// The socket closes without its linger only when the client said it sends nothing more
    /// and nothing of it is left to read.
    func testTheSocketLingersUnlessTheClientAskedForTheCloseAndSentAllOfItsRequest() {
        struct Case {
            let name: String
            let request: String
            let draining: Bool
            let requestEnds: Bool
            let pipelined: Bool
            let ending: Exchange.SocketEnding
        }
        let close = head("GET / HTTP/1.1", "Host: a", "Connection: close")
        let cases = [
            Case(name: "Connection: close, read to its end", request: close, draining: false, requestEnds: true,
                 pipelined: false, ending: .atOnceUnlessClientSends),
            Case(name: "HTTP/1.0 without keep-alive", request: head("GET / HTTP/1.0"), draining: false, requestEnds: true,
                 pipelined: false, ending: .atOnceUnlessClientSends),
            Case(name: "a body sent whole", request: head("POST / HTTP/1.1", "Host: a", "Connection: close", "Content-Length: 3"),
                 draining: false, requestEnds: true, pipelined: false, ending: .atOnceUnlessClientSends),
            Case(name: "a chunked body sent whole",
                 request: head("POST / HTTP/1.1", "Host: a", "Connection: close", "Transfer-Encoding: chunked"),
                 draining: false, requestEnds: true, pipelined: false, ending: .atOnceUnlessClientSends),
            Case(name: "a body still to come", request: head("POST / HTTP/1.1", "Host: a", "Connection: close", "Content-Length: 100"),
                 draining: false, requestEnds: false, pipelined: false, ending: .lingering),
            Case(name: "bytes after the request", request: close, draining: false, requestEnds: true, pipelined: true,
                 ending: .lingering),
            Case(name: "the relay drains a keep-alive client", request: get, draining: true, requestEnds: true,
                 pipelined: false, ending: .lingering),
            Case(name: "HTTP/1.0 with keep-alive", request: head("GET / HTTP/1.0", "Connection: keep-alive"), draining: true,
                 requestEnds: true, pipelined: false, ending: .lingering),
            Case(name: "a protocol switch", request: head("GET / HTTP/1.1", "Host: a", "Connection: close, upgrade", "Upgrade: websocket"),
                 draining: false, requestEnds: true, pipelined: false, ending: .lingering),
        ]
        for test in cases {
            var driver = ExchangeDriver()
            _ = driver.request(test.request, draining: test.draining)
            if test.requestEnds { driver.requestEnds() }
            XCTAssertEqual(driver.exchange.socketEnding(pipelined: test.pipelined), test.ending, test.name)
        }
        XCTAssertEqual(Exchange().socketEnding(pipelined: false), .lingering, "before any head (a refused first head)")

        var refused = ExchangeDriver()
        _ = refused.refusedRequest(get, .badRequest("bad target"), closing: true)
        XCTAssertFalse(refused.exchange.keepAlive)
        XCTAssertEqual(refused.exchange.socketEnding(pipelined: false), .lingering, "the relay's refusal closes a keep-alive client")

        var kept = ExchangeDriver()
        _ = kept.request(get)
        kept.requestEnds()
        _ = kept.response(ok)
        _ = kept.responseEnds()
        XCTAssertTrue(kept.exchange.nextRequest(draining: false))
        XCTAssertEqual(kept.exchange.socketEnding(pipelined: false), .lingering, "after a keep-alive exchange (an idle close)")
    }

    func testResponseBeforeTheWholeRequestEndsTheConnection() {
        var driver = ExchangeDriver()
        _ = driver.request(head("POST / HTTP/1.1", "Host: a", "Content-Length: 100"))
        XCTAssertEqual(respondFraming(driver.response(ok)), .contentLength)
        XCTAssertFalse(driver.exchange.keepAlive)
        guard case (_, .close(upstreamReusable: false)) = driver.responseEnds() else {
            return XCTFail("the rest of the request cannot be told from a next one")
        }
    }

    func testPipelinedBytesStopReadingPastTheirLimit() {
        let exchange = Exchange()
        XCTAssertTrue(exchange.readsOnWhilePipelined(pipelinedBytes: Exchange.maxBufferedPipelineBytes))
        XCTAssertFalse(exchange.readsOnWhilePipelined(pipelinedBytes: Exchange.maxBufferedPipelineBytes + 1))
        XCTAssertFalse(exchange.readsClient(pipelinedBytes: Exchange.maxBufferedPipelineBytes + 1))
        XCTAssertTrue(exchange.readsClient(pipelinedBytes: 10))
    }

    func testAFullUpstreamBacklogStopsTheClientAndTheBodyClock() {
        var driver = ExchangeDriver()
        _ = driver.request(head("POST / HTTP/1.1", "Host: a", "Content-Length: 100"))
        XCTAssertTrue(driver.exchange.startBodyClock(now: driver.now))
        XCTAssertTrue(driver.exchange.upstreamBacklogFull(), "the body's timer stops: the relay stopped reading")
        XCTAssertFalse(driver.exchange.readsClient(pipelinedBytes: 0))
        XCTAssertNil(driver.exchange.bodyBytesArrived(10, now: driver.now, timeoutMilliseconds: 5_000, minBytesPerSecond: 100))
        guard case .resumeReading(restartBodyClock: true) = driver.exchange.upstreamBacklogDrained(pipelinedBytes: 0) else {
            return XCTFail("reading and the body clock resume")
        }
        guard case .none = driver.exchange.upstreamBacklogDrained(pipelinedBytes: 0) else { return XCTFail("once") }
        driver.exchange.clientBacklogFull()
        XCTAssertTrue(driver.exchange.clientBacklogDrained())
        XCTAssertFalse(driver.exchange.clientBacklogDrained())
    }

    // MARK: 100-continue and the body's deadline

    func testBodyClockStartsWithTheHeadWithoutExpect() {
        var driver = ExchangeDriver()
        _ = driver.request(head("PUT / HTTP/1.1", "Host: a", "Content-Length: 10"))
        XCTAssertTrue(driver.exchange.startsBodyClockWithHead)
    }

    func testClientExpectingContinueGetsItsBodyClockAtItsFirstByte() {
        var driver = ExchangeDriver()
        _ = driver.request(head("PUT / HTTP/1.1", "Host: a", "Content-Length: 10", "Expect: 100-continue"))
        XCTAssertFalse(driver.exchange.startsBodyClockWithHead)
        XCTAssertEqual(driver.exchange.bodyBytesArrived(4, now: 2_000, timeoutMilliseconds: 5_000, minBytesPerSecond: 100), 7_000)
        XCTAssertEqual(driver.exchange.bodyBytesArrived(100, now: 2_500, timeoutMilliseconds: 5_000, minBytesPerSecond: 100),
                       2_000 + 5_000 + 1_000, "each byte extends the deadline by 1/minBytesPerSecond")
        XCTAssertEqual(driver.exchange.expiredDeadline, .requestBody)
        guard case .forwarded = driver.requestEnds() else { return XCTFail("forwarded") }
        XCTAssertEqual(driver.exchange.expiredDeadline, Exchange.Deadline.none, "a complete body has no deadline")
    }

    func testContinueIsRelayedToAnHTTP11ClientBeforeTheFinalResponse() {
        var driver = ExchangeDriver()
        _ = driver.request(head("PUT / HTTP/1.1", "Host: a", "Content-Length: 10", "Expect: 100-continue"))
        guard case .relayInterim = driver.response(head("HTTP/1.1 100 Continue")) else { return XCTFail("relayed") }
        guard case (.interim, _) = driver.responseEnds() else { return XCTFail("the final response follows") }
        XCTAssertFalse(driver.exchange.responseHeadSent)
        driver.requestEnds()
        XCTAssertEqual(respondFraming(driver.response(ok)), .contentLength)
        XCTAssertTrue(driver.exchange.keepAlive)
    }

    func testInterimResponsesAreDroppedForAnHTTP10Client() {
        var driver = ExchangeDriver()
        _ = driver.request(head("GET / HTTP/1.0"))
        guard case .dropInterim = driver.response(head("HTTP/1.1 103 Early Hints")) else { return XCTFail("dropped") }
    }

    func testAFloodOfInterimResponsesFailsTheExchange() {
        var driver = ExchangeDriver()
        _ = driver.request(get)
        for _ in 0..<Exchange.maxInterimResponses {
            guard case .relayInterim = driver.response(head("HTTP/1.1 102 Processing")) else { return XCTFail("relayed") }
            _ = driver.responseEnds()
        }
        guard case .reject = driver.response(head("HTTP/1.1 102 Processing")) else { return XCTFail("one too many") }
    }

    // MARK: Upgrade

    func testAn101TheRelayDidNotAskForIsRejected() {
        var driver = ExchangeDriver()
        _ = driver.request(head("GET /ws HTTP/1.1", "Host: a", "Connection: upgrade", "Upgrade: h2c"), upgrade: nil)
        driver.requestEnds()
        guard case .reject = driver.response(head("HTTP/1.1 101 Switching Protocols", "Upgrade: h2c")) else {
            return XCTFail("no tunnel for requests this route never saw")
        }
    }

    func testAnAllowedUpgradeBecomesATunnel() {
        var driver = ExchangeDriver()
        _ = driver.request(head("GET /ws HTTP/1.1", "Host: a", "Connection: upgrade", "Upgrade: websocket"),
                           upgrade: Array("websocket".utf8))
        XCTAssertFalse(driver.exchange.pausesParserAtRequestEnd, "llhttp stops by itself after an upgrade request")
        driver.requestEnds()
        XCTAssertEqual(respondFraming(driver.response(head("HTTP/1.1 101 Switching Protocols", "Upgrade: websocket"))),
                       ForwardedHead.Framing.none)
        XCTAssertTrue(driver.exchange.releaseHead())
        driver.exchange.tunnelStarts()
        XCTAssertEqual(driver.exchange.phase, .tunnelling)
        XCTAssertEqual(driver.exchange.expiredDeadline, Exchange.Deadline.none)
        XCTAssertFalse(driver.exchange.readsClient(pipelinedBytes: 0), "the tunnel reads on its own terms")
        guard case .endTunnel = driver.exchange.clientEnded(cleanly: true) else { return XCTFail("the tunnel ends") }
    }
}
