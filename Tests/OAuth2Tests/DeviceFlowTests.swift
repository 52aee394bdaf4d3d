import Endpoints
import OAuth2
import SafeText
import XCTest

/// One identity's device login (RFC 8628 §3.4-3.5) driven by an injected clock.
final class DeviceFlowTests: XCTestCase {
    private let deviceCode = Secret("GmRhmhcxhwAzkoEqiMEg_DnyEysNkuNhszIySk9eS")
    private let tokenEndpoint = HTTPURL(scheme: .https, host: "idp.example.com", path: "/token")

    private func makeFlow(expiresIn: Double = 600, interval: Double = 5, at now: Double = 100) -> DeviceFlow {
        let authorization = DeviceAuthorization(deviceCode: deviceCode, userCode: "WDJB-MJHT", verificationUri: "https://idp.example.com/device",
                                                verificationUriComplete: "https://idp.example.com/device?code=WDJB-MJHT",
                                                expiresIn: expiresIn, interval: interval)
        return DeviceFlow(identity: makeIdentity(.deviceCode(seed: nil), clientId: "tv", secret: nil), tokenEndpoint: tokenEndpoint,
                          authorization: authorization, startedAt: now)
    }

    private static func oauth(_ code: OAuthErrorCode, status: Int = 400) -> TokenEndpointError {
        .oauth(OAuthError(code: code), status: status, retryAfter: nil)
    }

    /// Starts the poll due at `now`, failing when the flow asks for anything else.
    @discardableResult
    private func poll(_ flow: inout DeviceFlow, at now: Double, file: StaticString = #filePath, line: UInt = #line) -> TokenRequest? {
        guard case .poll(let request) = flow.nextAction(at: now) else {
            XCTFail("no poll due at \(now): \(flow)", file: file, line: line)
            return nil
        }
        return request
    }

    private func sleepsUntil(_ flow: inout DeviceFlow, at now: Double) -> Double? {
        if case .sleep(let until) = flow.nextAction(at: now) { return until }
        return nil
    }

    func testFirstPollComesOneIntervalAfterTheStart() throws {
        var flow = makeFlow()
        XCTAssertEqual(flow.nextPollAt, 105)
        XCTAssertEqual(sleepsUntil(&flow, at: 100), 105)
        let request = try XCTUnwrap(poll(&flow, at: 105))
        XCTAssertEqual(request.url, tokenEndpoint)
        XCTAssertTrue(request.bodyText.contains("device_code=\(deviceCode.value)"))
        guard case .idle = flow.nextAction(at: 106) else { return XCTFail("a poll in flight is not repeated") }
        XCTAssertEqual(flow.state, .polling)
    }

    func testAuthorizationPendingPollsAgainAfterTheIntervalWithoutAnError() {
        var flow = makeFlow()
        poll(&flow, at: 105)
        XCTAssertEqual(flow.pollFailed(Self.oauth(.authorizationPending), at: 105.5), .pending)
        XCTAssertEqual(flow.nextPollAt, 110.5)
        XCTAssertNil(flow.lastError, "pending is not a failure")
        XCTAssertEqual(sleepsUntil(&flow, at: 106), 110.5)
        poll(&flow, at: 110.5)
    }

    func testSlowDownAddsFiveSecondsEachTime() {
        var flow = makeFlow()
        poll(&flow, at: 105)
        XCTAssertEqual(flow.pollFailed(Self.oauth(.slowDown), at: 105), .slowedDown(interval: 10))
        XCTAssertEqual(flow.nextPollAt, 115)
        poll(&flow, at: 115)
        XCTAssertEqual(flow.pollFailed(Self.oauth(.slowDown), at: 115), .slowedDown(interval: 15))
        XCTAssertEqual(flow.nextPollAt, 130)
        poll(&flow, at: 130)
        XCTAssertEqual(flow.pollFailed(Self.oauth(.authorizationPending), at: 130), .pending)
        XCTAssertEqual(flow.nextPollAt, 145, "the slower interval stays")
    }

    func testExpiredTokenEndsTheFlow() {
        var flow = makeFlow()
        poll(&flow, at: 105)
        XCTAssertEqual(flow.pollFailed(Self.oauth(.expiredToken), at: 105), .ended(.expired))
        XCTAssertEqual(flow.state, .ended(.expired))
        guard case .ended(.expired?) = flow.nextAction(at: 200) else { return XCTFail("\(flow)") }
    }

    func testAccessDeniedEndsTheFlowSayingSo() {
        var flow = makeFlow()
        poll(&flow, at: 105)
        let denied = TokenEndpointError.oauth(OAuthError(code: .accessDenied, errorDescription: "the user said no"), status: 400, retryAfter: nil)
        XCTAssertEqual(flow.pollFailed(denied, at: 105), .ended(.denied(denied.oauthError)))
        XCTAssertEqual(DeviceFlowEnd.denied(denied.oauthError).description, "the login was refused at the identity provider (the user said no)")
        XCTAssertEqual(DeviceFlowEnd.denied(nil).code, "access_denied")
    }

    func testUnreachableOr5xxPollsAgainAfterTwiceTheInterval() {
        var flow = makeFlow()
        poll(&flow, at: 105)
        let down = TokenEndpointError.unreachable(reason: "connection refused")
        XCTAssertEqual(flow.pollFailed(down, at: 105), .retrying(down))
        XCTAssertEqual(flow.nextPollAt, 115)
        XCTAssertEqual(flow.lastError, down)
        poll(&flow, at: 115)
        let busy = TokenEndpointError.unexpectedStatus(status: 503, contentType: nil, excerpt: nil, retryAfter: 30)
        XCTAssertEqual(flow.pollFailed(busy, at: 115), .retrying(busy))
        XCTAssertEqual(flow.nextPollAt, 145, "a longer Retry-After is honoured")
        poll(&flow, at: 145)
        XCTAssertEqual(flow.pollFailed(Self.oauth(.serverError, status: 500), at: 145), .retrying(Self.oauth(.serverError, status: 500)))
        XCTAssertEqual(flow.interval, 5, "the person's interval is unchanged")
    }

    /// RFC 8628 §3.5: on connection timeouts (and the other answers that say the endpoint cannot
    /// answer now) the polls back off exponentially, bounded; the IdP's next real answer ends it.
    func testTimeoutsInARowDoubleTheWaitUpToAMinuteAndAnAnswerEndsTheBackoff() {
        var flow = makeFlow(expiresIn: 1800)
        var now = 105.0
        var waits: [Double] = []
        for _ in 0..<6 {
            poll(&flow, at: now)
            XCTAssertEqual(flow.pollFailed(.timedOut(seconds: 30), at: now), .retrying(.timedOut(seconds: 30)))
            let next = flow.nextPollAt ?? now
            waits.append(next - now)
            now = next
        }
        XCTAssertEqual(waits, [10, 20, 40, 60, 60, 60])
        poll(&flow, at: now)
        XCTAssertEqual(flow.pollFailed(Self.oauth(.authorizationPending), at: now), .pending)
        XCTAssertEqual(flow.nextPollAt, now + 5, "the endpoint answers again: back to the interval")
        poll(&flow, at: now + 5)
        XCTAssertEqual(flow.pollFailed(.timedOut(seconds: 30), at: now + 5), .retrying(.timedOut(seconds: 30)))
        XCTAssertEqual(flow.nextPollAt, now + 15, "a new run of failures starts from twice the interval")
    }

    func testTheBackoffNeverPollsSoonerThanASlowedDownInterval() {
        var flow = makeFlow(expiresIn: 1800, interval: 60)
        poll(&flow, at: 160)
        XCTAssertEqual(flow.pollFailed(Self.oauth(.slowDown), at: 160), .slowedDown(interval: 65))
        poll(&flow, at: 225)
        _ = flow.pollFailed(.unreachable(reason: "connection refused"), at: 225)
        XCTAssertEqual(flow.nextPollAt, 290, "the 60 s bound is below the interval: the interval stays")
    }

    func testOtherRefusalsEndTheFlow() {
        var flow = makeFlow()
        poll(&flow, at: 105)
        let refused = Self.oauth(.invalidClient, status: 401)
        XCTAssertEqual(flow.pollFailed(refused, at: 105), .ended(.refused(refused)))
        XCTAssertEqual(DeviceFlowEnd.refused(refused).code, "invalid_client")
    }

    func testTheClockEndsTheFlowAtExpiry() {
        var flow = makeFlow(expiresIn: 12, interval: 5)
        poll(&flow, at: 105)
        flow.pollFailed(Self.oauth(.authorizationPending), at: 105)
        poll(&flow, at: 110)
        flow.pollFailed(Self.oauth(.authorizationPending), at: 110)
        XCTAssertEqual(flow.nextPollAt, 112, "no poll is planned past the expiry")
        guard case .ended(.expired?) = flow.nextAction(at: 112) else { return XCTFail("\(flow)") }
        XCTAssertEqual(flow.state, .ended(.expired))
    }

    func testAPendingAnswerAfterExpiryEndsTheFlow() {
        var flow = makeFlow(expiresIn: 6, interval: 5)
        poll(&flow, at: 105)
        XCTAssertEqual(flow.pollFailed(Self.oauth(.authorizationPending), at: 107), .ended(.expired))
    }

    func testSuccessCompletesTheFlow() {
        var flow = makeFlow()
        poll(&flow, at: 105)
        flow.pollSucceeded(at: 106)
        XCTAssertEqual(flow.state, .completed)
        XCTAssertEqual(flow.completedAt, 106)
        XCTAssertTrue(flow.isOver)
        guard case .ended(nil) = flow.nextAction(at: 107) else { return XCTFail("\(flow)") }
        XCTAssertEqual(flow.pollFailed(Self.oauth(.authorizationPending), at: 107), .ended(nil), "a late answer changes nothing")
    }

    func testPromptCountsDownTheSecondsLeft() {
        let flow = makeFlow(expiresIn: 600, at: 100)
        XCTAssertEqual(flow.prompt(at: 100), DevicePrompt(userCode: "WDJB-MJHT", verificationUri: "https://idp.example.com/device",
                                                          verificationUriComplete: "https://idp.example.com/device?code=WDJB-MJHT",
                                                          expiresIn: 600))
        XCTAssertEqual(flow.prompt(at: 159.5).expiresIn, 540)
        XCTAssertEqual(flow.prompt(at: 800).expiresIn, 0)
    }

    func testCancelEndsAWaitingOrPollingFlow() {
        var flow = makeFlow()
        flow.cancel()
        guard case .ended(.cancelled?) = flow.nextAction(at: 105) else { return XCTFail("\(flow)") }
        var polling = makeFlow()
        poll(&polling, at: 105)
        polling.cancel()
        XCTAssertEqual(polling.pollFailed(Self.oauth(.authorizationPending), at: 106), .ended(.cancelled))
    }

    func testDescriptionShowsNoCode() {
        var flow = makeFlow()
        poll(&flow, at: 105)
        assertHidden([deviceCode.value, "WDJB-MJHT"], in: flow)
    }
}
