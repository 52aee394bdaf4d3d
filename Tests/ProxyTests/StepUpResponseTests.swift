import HTTP1
import OAuth2
@testable import Proxy
import XCTest

/// An upstream's step-up challenge (RFC 6750 §3.1 `insufficient_scope`, RFC 9470
/// `insufficient_user_authentication`) to a person's token, as the response half of an exchange
/// classifies it: reported to the identity, and what the identity made of it decides the answer.
/// Any other 401 or 403 goes the way it always went.
final class StepUpResponseTests: XCTestCase {
    private var status = 0
    private var keepAlive = true
    private let token = ExchangeDriver.token("person")
    private let personal = ExchangeDriver.plan(identity: "me", interactive: true)

    private func request(_ text: String = head("GET /orders HTTP/1.1", "Host: a"), pending: Bool = false) -> ExchangeRequest {
        var request = ExchangeRequest(parsedHead(text))
        if !pending { request.upload = .complete }
        return request
    }

    private func classify(_ response: inout ExchangeResponse, _ text: String, to request: ExchangeRequest,
                          credential: RequestCredential, plan: RoutePlan) -> ExchangeResponse.HeadAction {
        response.head(parsedHead(text, kind: .response), to: request, credential: credential, plan: plan, status: &status,
                      keepAlive: &keepAlive)
    }

    private let insufficientScope = head("HTTP/1.1 403 Forbidden", "Content-Length: 0",
                                         "WWW-Authenticate: Bearer realm=\"orders\", error=\"insufficient_scope\", scope=\"orders.write orders.read\"")

    func testA403InsufficientScopeToAPersonsTokenIsReportedAsAStepUp() {
        var response = ExchangeResponse()
        let action = classify(&response, insufficientScope, to: request(), credential: .carried(token), plan: personal)
        guard case .reportStepUp(let reported, let stepUp) = action else { return XCTFail("a step-up, not \(action)") }
        XCTAssertTrue(reported === token)
        XCTAssertEqual(stepUp, StepUp(scope: ["orders.write", "orders.read"]))
        XCTAssertEqual(status, 0, "nothing goes to the client yet")
    }

    func testA401AskingForAStrongerLoginToAReplayedTokenIsReportedToo() {
        var response = ExchangeResponse()
        let challenge = head("HTTP/1.1 401 Unauthorized", "Content-Length: 0", "WWW-Authenticate: Basic realm=\"x\"",
                             "WWW-Authenticate: Bearer error=\"insufficient_user_authentication\", acr_values=\"urn:mfa\", max_age=\"60\"")
        let action = classify(&response, challenge, to: request(), credential: .replayed(token), plan: personal)
        guard case .reportStepUp(_, let stepUp) = action else { return XCTFail("a step-up, not \(action)") }
        XCTAssertEqual(stepUp, StepUp(acrValues: ["urn:mfa"], maxAge: 60))
    }

    func testOther403sGoToTheClientUnchanged() {
        for challenge in [head("HTTP/1.1 403 Forbidden", "Content-Length: 0"),
                          head("HTTP/1.1 403 Forbidden", "Content-Length: 0", "WWW-Authenticate: Bearer error=\"invalid_token\""),
                          head("HTTP/1.1 403 Forbidden", "Content-Length: 0", "WWW-Authenticate: Bearer error=\"insufficient_scope\"")] {
            var response = ExchangeResponse()
            let action = classify(&response, challenge, to: request(), credential: .carried(token), plan: personal)
            XCTAssertEqual(respondFraming(action), .contentLength, challenge)
            XCTAssertEqual(status, 403)
        }
    }

    func testABearerChallengeWithoutAnErrorIsARefusalAsBefore() {
        var response = ExchangeResponse()
        let action = classify(&response, head("HTTP/1.1 401 Unauthorized", "Content-Length: 0", "WWW-Authenticate: Bearer realm=\"orders\""),
                              to: request(), credential: .carried(token), plan: personal)
        guard case .reportRefusedToken = action else { return XCTFail("a refused token, not \(action)") }
    }

    func testTheChallengeOfTheSchemeOfTheTokenSentGivesTheStepUp() {
        var response = ExchangeResponse()
        let both = head("HTTP/1.1 403 Forbidden", "Content-Length: 0",
                        "WWW-Authenticate: DPoP algs=\"ES256\", Bearer error=\"insufficient_scope\", scope=\"orders.write\"")
        let action = classify(&response, both, to: request(), credential: .carried(token), plan: personal)
        guard case .reportStepUp(_, let stepUp) = action else { return XCTFail("a step-up for the Bearer token, not \(action)") }
        XCTAssertEqual(stepUp, StepUp(scope: ["orders.write"]))
        let parsed = parsedHead(both, kind: .response)
        XCTAssertNil(StepUpChallenge.stepUp(in: parsed, sentAsDPoP: true), "the DPoP challenge asks a DPoP token for nothing")
        let dpopFirst = parsedHead(head("HTTP/1.1 403 Forbidden", "Content-Length: 0",
                                        "WWW-Authenticate: Bearer realm=\"orders\"",
                                        "WWW-Authenticate: DPoP algs=\"ES256\", error=\"insufficient_scope\", scope=\"dpop.scope\""),
                                   kind: .response)
        XCTAssertEqual(StepUpChallenge.stepUp(in: dpopFirst, sentAsDPoP: true), StepUp(scope: ["dpop.scope"]))
        XCTAssertNil(StepUpChallenge.stepUp(in: dpopFirst, sentAsDPoP: false))
        let bearerOnly = parsedHead(head("HTTP/1.1 403 Forbidden", "Content-Length: 0",
                                         "WWW-Authenticate: Bearer error=\"insufficient_scope\", scope=\"orders.write\""), kind: .response)
        XCTAssertEqual(StepUpChallenge.stepUp(in: bearerOnly, sentAsDPoP: true), StepUp(scope: ["orders.write"]),
                       "no challenge of the token's scheme: the first one")
    }

    func testOnlyAPersonsTokenStepsUp() {
        var response = ExchangeResponse()
        let service = classify(&response, insufficientScope, to: request(), credential: .carried(token),
                               plan: ExchangeDriver.plan(identity: "svc"))
        XCTAssertEqual(respondFraming(service), .contentLength, "a client-credentials identity cannot log in for more")
        response = ExchangeResponse()
        let none = classify(&response, insufficientScope, to: request(), credential: .none, plan: personal)
        XCTAssertEqual(respondFraming(none), .contentLength, "a request that carried no token")
        response = ExchangeResponse()
        let ok = classify(&response, head("HTTP/1.1 200 OK", "Content-Length: 0",
                                          "WWW-Authenticate: Bearer error=\"insufficient_scope\", scope=\"x\""),
                          to: request(), credential: .carried(token), plan: personal)
        XCTAssertEqual(respondFraming(ok), .contentLength, "only a 401 or 403 is read")
    }

    private func reported(_ outcome: StepUpOutcome, _ text: String, to request: ExchangeRequest,
                          response: inout ExchangeResponse) -> ExchangeResponse.HeadAction {
        response.stepUpReported(outcome, head: parsedHead(text, kind: .response), of: request, credential: .carried(token), plan: personal,
                                status: &status, keepAlive: &keepAlive)
    }

    func testALoginNeededDropsTheAnswerAndTheRequestAsksTheIdentityAgain() {
        var response = ExchangeResponse()
        let problem = TokenUnavailable(identity: "me", reason: .needsLogin, detail: "log in")
        guard case .discard = reported(.loginNeeded(problem), insufficientScope, to: request(), response: &response) else {
            return XCTFail("dropped")
        }
        XCTAssertEqual(status, 0)
        guard case .refused = response.messageEnded() else { return XCTFail("drained") }
        guard case .replay(afterStepUp: true) = response.finished(requestComplete: true) else { return XCTFail("asked again") }
        XCTAssertEqual(response.progress, .awaited)
    }

    func testARequestThatCannotGoAgainGetsTheUpstreamsAnswer() {
        var response = ExchangeResponse()
        let problem = TokenUnavailable(identity: "me", reason: .needsLogin, detail: "log in")
        let action = reported(.loginNeeded(problem), insufficientScope,
                              to: request(head("POST /orders HTTP/1.1", "Host: a", "Content-Length: 9"), pending: true), response: &response)
        XCTAssertEqual(respondFraming(action), .contentLength)
        XCTAssertEqual(status, 403)
    }

    func testADeclinedStepUpLetsTheAnswerThroughAndAGrantedOneIsARefusal() {
        var response = ExchangeResponse()
        XCTAssertEqual(respondFraming(reported(.declined, insufficientScope, to: request(), response: &response)), .contentLength)
        XCTAssertEqual(status, 403)
        response = ExchangeResponse()
        let granted = reported(.alreadyGranted, head("HTTP/1.1 401 Unauthorized", "Content-Length: 0"), to: request(), response: &response)
        guard case .reportRefusedToken = granted else { return XCTFail("a refused token (401 is in retryOnStatus), not \(granted)") }
        response = ExchangeResponse()
        XCTAssertEqual(respondFraming(reported(.alreadyGranted, insufficientScope, to: request(), response: &response)), .contentLength,
                       "a 403 is not in retryOnStatus: to the client")
    }
}
