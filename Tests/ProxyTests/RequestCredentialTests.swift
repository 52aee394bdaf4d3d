import OAuth2
@testable import Proxy
import XCTest

/// The token of one request, from the head's lookup to the token it carries: what a lookup
/// does to a waiting request, table by table, with no socket and no token thread.
final class RequestCredentialTests: XCTestCase {
    private let token = ExchangeDriver.token("t1")

    func testATokenForARequestWaitingBeforeForwardingIsCarried() {
        var credential = RequestCredential.waiting(.beforeForwarding(parserPausedAtHead: true))
        guard case .forward(resumeParser: true) = credential.lookedUp(.inject(token)) else {
            return XCTFail("forwarded, the parser resumed for the body")
        }
        XCTAssertTrue(credential.injected === token)
        XCTAssertFalse(credential.isWaiting)
        XCTAssertFalse(credential.isReplay, "a first token: a refusal may still replay the request")
    }

    func testATokenForARequestWaitingWithoutABodyLeavesTheParserAsItIs() {
        var credential = RequestCredential.waiting(.beforeForwarding(parserPausedAtHead: false))
        guard case .forward(resumeParser: false) = credential.lookedUp(.inject(token)) else { return XCTFail("forwarded") }
    }

    func testATokenForARequestWaitingForAReplayIsReplayed() {
        var credential = RequestCredential.waiting(.beforeReplay)
        guard case .forward(resumeParser: false) = credential.lookedUp(.inject(token)) else { return XCTFail("forwarded") }
        XCTAssertTrue(credential.injected === token)
        XCTAssertTrue(credential.isReplay, "a second refusal goes to the client")
    }

    func testAnotherFetchKeepsTheRequestWaiting() {
        var credential = RequestCredential.waiting(.beforeForwarding(parserPausedAtHead: true))
        guard case .keepWaiting = credential.lookedUp(.wait) else { return XCTFail("waits on") }
        XCTAssertTrue(credential.isWaiting)
        XCTAssertNil(credential.injected)
    }

    func testAFailedFetchEndsTheWaitWithItsReason() {
        var credential = RequestCredential.waiting(.beforeForwarding(parserPausedAtHead: true))
        guard case .fail(let reason, resumeParser: true) = credential.lookedUp(.fail(ExchangeDriver.unavailable("svc"))) else {
            return XCTFail("failed, the parser resumed so that the body is read past")
        }
        XCTAssertEqual(reason.identity, "svc")
        XCTAssertFalse(credential.isWaiting)
        XCTAssertNil(credential.injected)
    }

    func testALookupForARequestNotWaitingChangesNothing() {
        var credential = RequestCredential.carried(token)
        guard case .keepWaiting = credential.lookedUp(.inject(ExchangeDriver.token("t2"))) else { return XCTFail("ignored") }
        XCTAssertTrue(credential.injected === token, "the token it carries stays")
    }

    func testAnExpiredWaitNamesTheIdentityAndTheLimit() {
        let reason = RequestCredential.waitExpired(identity: "svc", tokenWaitSeconds: 2.5)
        XCTAssertEqual(reason.identity, "svc")
        XCTAssertEqual(reason.reason, .unavailable)
        XCTAssertEqual(reason.retryAfterSeconds, 1)
        XCTAssertTrue(reason.detail.contains("within tokenWaitSeconds (2.5 s)"), reason.detail)
    }
}
