@testable import Proxy
import XCTest

/// What the login pages read of a request, and the paths they redirect to.
final class LoginRequestTests: XCTestCase {
    func testBrowsersPreferHTMLAndScriptsDoNot() {
        XCTAssertTrue(LoginRequest.prefersHTML("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"), "Chromium")
        XCTAssertTrue(LoginRequest.prefersHTML("text/html, */*; q=0.01"))
        XCTAssertFalse(LoginRequest.prefersHTML("*/*"), "curl")
        XCTAssertFalse(LoginRequest.prefersHTML(""), "no Accept")
        XCTAssertFalse(LoginRequest.prefersHTML("application/json"))
        XCTAssertFalse(LoginRequest.prefersHTML("application/json, text/html;q=0.5"), "JSON is preferred")
        XCTAssertFalse(LoginRequest.prefersHTML("text/html;q=0"))
    }

    func testCookiesAreReadAsNameValuePairs() {
        let cookies = LoginRequest.cookies("a=1; oauth_relay_login_x=b=c ;empty=; junk")
        XCTAssertEqual(cookies.map(\.0), ["a", "oauth_relay_login_x", "empty"])
        XCTAssertEqual(cookies.map(\.1), ["1", "b=c", ""])
    }

    func testOnlyPathsOnTheRelayAreReturnedTo() {
        XCTAssertEqual(LoginEndpoints.localPath("/orders?id=1"), "/orders?id=1")
        for open in ["https://evil.example/", "//evil.example/x", "/\\evil.example", "orders", "/a b", "/.oauth-relay/login/me"] {
            XCTAssertNil(LoginEndpoints.localPath(open), open)
        }
    }

    func testLoginPathsCarryTheReturnPathEncoded() {
        XCTAssertEqual(LoginEndpoints.loginPath("me", returnTo: "/orders?id=1&x=2"), "/.oauth-relay/login/me?return=%2Forders%3Fid%3D1%26x%3D2")
        XCTAssertEqual(LoginEndpoints.statusPath("tv", returnTo: nil), "/.oauth-relay/status/tv")
    }

    func testPagesEscapeWhatTheyShow() {
        let page = LoginPage(title: "<script>", lines: ["a & \"b\""], links: [("x", "/p?a=1&b=\"2\"")])
        XCTAssertFalse(page.html.contains("<script>"))
        XCTAssertTrue(page.html.contains("&lt;script&gt;"))
        XCTAssertTrue(page.html.contains("a &amp; &quot;b&quot;"))
        XCTAssertTrue(page.html.contains("href=\"/p?a=1&amp;b=&quot;2&quot;\""))
    }
}
