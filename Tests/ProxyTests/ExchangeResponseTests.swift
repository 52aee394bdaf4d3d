import HTTP1
@testable import Proxy
import XCTest

/// The response half of an exchange on its own: a head classified against the request it answers,
/// the held head released, body bytes counted, the ends and the retry after a failure, with no
/// `Exchange` and no socket.
final class ExchangeResponseTests: XCTestCase {
    private var status = 0
    private var keepAlive = true

    /// A request as its head said, complete unless `pending`.
    private func request(_ text: String, pending: Bool = false) -> ExchangeRequest {
        var request = ExchangeRequest(parsedHead(text))
        if !pending { request.upload = .complete }
        return request
    }

    private func classify(_ response: inout ExchangeResponse, _ text: String, to request: ExchangeRequest,
                          credential: RequestCredential = .none, plan: RoutePlan? = ExchangeDriver.plan()) -> ExchangeResponse.HeadAction {
        response.head(parsedHead(text, kind: .response), to: request, credential: credential, plan: plan, status: &status,
                      keepAlive: &keepAlive)
    }

    func testAnInterimHeadGoesToAnHTTP11ClientAndIsDroppedForAnHTTP10One() {
        var response = ExchangeResponse()
        guard case .relayInterim = classify(&response, head("HTTP/1.1 103 Early Hints"), to: request(head("GET / HTTP/1.1", "Host: a"))) else {
            return XCTFail("relayed")
        }
        XCTAssertEqual(response.progress, .interim)
        guard case .dropInterim = classify(&response, head("HTTP/1.1 100 Continue"), to: request(head("GET / HTTP/1.0"))) else {
            return XCTFail("dropped")
        }
        XCTAssertEqual(status, 0, "no status is recorded for an interim answer")
    }

    func testOneInterimHeadTooManyRejectsTheResponse() {
        var response = ExchangeResponse()
        let get = request(head("GET / HTTP/1.1", "Host: a"))
        for _ in 0..<ExchangeResponse.maxInterimResponses {
            guard case .relayInterim = classify(&response, head("HTTP/1.1 102 Processing"), to: get) else { return XCTFail("relayed") }
        }
        guard case .reject = classify(&response, head("HTTP/1.1 102 Processing"), to: get) else { return XCTFail("rejected") }
    }

    func testA101ToARequestThatAskedForNoUpgradeIsRejected() {
        var response = ExchangeResponse()
        let action = classify(&response, head("HTTP/1.1 101 Switching Protocols", "Upgrade: websocket"),
                              to: request(head("GET / HTTP/1.1", "Host: a")))
        guard case .reject = action else { return XCTFail("rejected") }
    }

    func testTheFramingFollowsTheHeadAndTheClientsVersion() {
        var response = ExchangeResponse()
        let lengthed = classify(&response, head("HTTP/1.1 200 OK", "Content-Length: 2"), to: request(head("GET / HTTP/1.1", "Host: a")))
        XCTAssertEqual(respondFraming(lengthed), .contentLength)
        response = ExchangeResponse()
        let toHead = classify(&response, head("HTTP/1.1 200 OK", "Content-Length: 2"), to: request(head("HEAD / HTTP/1.1", "Host: a")))
        XCTAssertEqual(respondFraming(toHead), ForwardedHead.Framing.none)
        XCTAssertTrue(keepAlive)
        response = ExchangeResponse()
        let unframed = classify(&response, head("HTTP/1.1 200 OK"), to: request(head("GET / HTTP/1.0")))
        XCTAssertEqual(respondFraming(unframed), .close)
        XCTAssertFalse(keepAlive, "a body delimited by the close ends the connection")
        XCTAssertEqual(status, 200)
    }

    func testAResponseBeforeTheWholeRequestEndsTheConnectionAfterIt() {
        var response = ExchangeResponse()
        let early = classify(&response, head("HTTP/1.1 413 Content Too Large", "Content-Length: 0"),
                             to: request(head("POST / HTTP/1.1", "Host: a", "Content-Length: 9"), pending: true))
        XCTAssertEqual(respondFraming(early), .contentLength)
        XCTAssertFalse(keepAlive)
        XCTAssertEqual(status, 413)
    }

    func testACarriedTokenRefusedIsReportedAndAReplayedOneIsNot() {
        let token = ExchangeDriver.token("first")
        let plan = ExchangeDriver.plan(identity: "svc")
        let get = request(head("GET / HTTP/1.1", "Host: a"))
        var response = ExchangeResponse()
        let refused = classify(&response, head("HTTP/1.1 401 Unauthorized", "Content-Length: 0"), to: get, credential: .carried(token), plan: plan)
        guard case .reportRefusedToken(let reported) = refused else { return XCTFail("reported") }
        XCTAssertTrue(reported === token)
        XCTAssertEqual(status, 0, "nothing goes to the client yet")
        response = ExchangeResponse()
        let again = classify(&response, head("HTTP/1.1 401 Unauthorized", "Content-Length: 0"), to: get, credential: .replayed(token), plan: plan)
        XCTAssertEqual(respondFraming(again), .contentLength, "the replay's answer goes to the client")
    }

    func testADroppedRefusalDrainsIntoAReplay() {
        var response = ExchangeResponse()
        guard case .discard = response.refusalReported(kept: false, head: parsedHead(head("HTTP/1.1 401 Unauthorized"), kind: .response),
                                                       of: request(head("GET / HTTP/1.1", "Host: a")), status: &status,
                                                       keepAlive: &keepAlive) else { return XCTFail("discarded") }
        guard case .refused = response.messageEnded() else { return XCTFail("refused") }
        guard case .replay = response.finished(requestComplete: true) else { return XCTFail("replayed") }
        XCTAssertEqual(response.progress, .awaited)
    }

    func testBodyBytesCountOnlyOnceTheHeldHeadIsReleased() {
        var response = ExchangeResponse()
        _ = classify(&response, head("HTTP/1.1 200 OK"), to: request(head("GET / HTTP/1.1", "Host: a")))
        var sent = 0
        XCTAssertEqual(response.body(5, sent: &sent), .drop, "held: the body follows the release")
        XCTAssertTrue(response.releaseHead())
        XCTAssertFalse(response.releaseHead(), "released once")
        XCTAssertEqual(response.body(5, sent: &sent), .writeAsChunk, "an upstream body without framing goes out in the relay's chunks")
        XCTAssertEqual(sent, 5)
        XCTAssertTrue(response.headSent)
        guard case .complete(.empty) = response.messageEnded() else { return XCTFail("an empty last chunk") }
        XCTAssertTrue(response.isComplete)
    }

    func testARequestGoesOnceMoreOnAFreshConnectionOnlyOnce() {
        var response = ExchangeResponse()
        XCTAssertFalse(response.retriesOnFreshConnection(after: .closed(nil), reused: true, receivedResponseBytes: false, requestHasBody: true))
        XCTAssertFalse(response.retriesOnFreshConnection(after: .closed(nil), reused: false, receivedResponseBytes: false, requestHasBody: false))
        XCTAssertTrue(response.retriesOnFreshConnection(after: .closed(nil), reused: true, receivedResponseBytes: false, requestHasBody: false))
        XCTAssertFalse(response.retriesOnFreshConnection(after: .closed(nil), reused: true, receivedResponseBytes: false, requestHasBody: false))
    }
}
