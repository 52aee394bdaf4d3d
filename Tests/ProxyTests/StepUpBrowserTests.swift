import BrowserSafety
import HTTP1
import OAuth2
@testable import Proxy
import XCTest

/// A page of another origin cannot make an upstream's step-up challenge send the person to the
/// IdP and hold the identity's requests: for its request the step-up is declined, and the
/// upstream's answer goes to the browser as it came.
final class StepUpBrowserTests: XCTestCase {
    private func browser(site: String?, origin: String? = nil, mode: String? = "navigate", dest: String? = "document") -> BrowserRequest {
        BrowserRequest(isSafeMethod: true, isPreflight: false, site: site, mode: mode, dest: dest, origin: origin, repeated: false,
                       host: "127.0.0.1:8180", overTLS: false)
    }

    func testOnlyTheRelaysOwnPagesAndThePersonsOwnNavigationsMayStepUp() {
        XCTAssertNil(BrowserRequest.stepUpRefusal(browser: nil), "curl, SDKs, services")
        XCTAssertNil(BrowserRequest.stepUpRefusal(browser: browser(site: "none")))
        XCTAssertNil(BrowserRequest.stepUpRefusal(browser: browser(site: "same-origin", origin: "http://127.0.0.1:8180", mode: "cors",
                                                                    dest: "empty")))
        XCTAssertNil(BrowserRequest.stepUpRefusal(browser: browser(site: nil, origin: "http://127.0.0.1:8180")), "an older browser")
        for (refused, why) in [(browser(site: "cross-site"), "a Lax top-level navigation from another site"),
                               (browser(site: "same-site"), "a sibling site"),
                               (browser(site: "bogus"), "a value no browser sends"),
                               (browser(site: "same-origin", origin: "https://evil.example"), "a foreign Origin"),
                               (browser(site: nil, origin: "null"), "an opaque Origin"),
                               (BrowserRequest(isSafeMethod: true, isPreflight: false, site: "none", mode: nil, dest: nil, origin: nil,
                                               repeated: true, host: "127.0.0.1:8180", overTLS: false), "repeated fields")] {
            XCTAssertNotNil(BrowserRequest.stepUpRefusal(browser: refused), why)
        }
    }

    func testAStepUpChallengeToARequestThatMayNotStepUpGoesToTheClient() {
        var request = ExchangeRequest(parsedHead(head("GET /orders HTTP/1.1", "Host: a")))
        request.upload = .complete
        request.mayStepUp = false
        var response = ExchangeResponse()
        var status = 0, keepAlive = true
        let challenge = head("HTTP/1.1 403 Forbidden", "Content-Length: 0",
                             "WWW-Authenticate: Bearer error=\"insufficient_scope\", scope=\"orders.write\"")
        let action = response.head(parsedHead(challenge, kind: .response), to: request, credential: .carried(ExchangeDriver.token("p")),
                                   plan: ExchangeDriver.plan(identity: "me", interactive: true), status: &status, keepAlive: &keepAlive)
        XCTAssertEqual(respondFraming(action), .contentLength, "\(action)")
        XCTAssertEqual(status, 403)
    }
}
