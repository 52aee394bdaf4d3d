import Endpoints
import HTTP1
@testable import LoginPages
import OAuth2
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

    func testLoginPathsCarryTheReturnPathEncoded() {
        XCTAssertEqual(LoginPaths.loginPath("me", returnTo: "/orders?id=1&x=2"), "/.oauth-relay/login/me?return=%2Forders%3Fid%3D1%26x%3D2")
        XCTAssertEqual(LoginPaths.statusPath("tv", returnTo: nil), "/.oauth-relay/status/tv")
    }

    func testTheLoginURLIsOnTheRedirectURIsOrigin() throws {
        var identity = Identity(name: "me", tokenUrl: HTTPURL(scheme: .https, host: "idp.example.com", path: "/token"),
                                grant: .authorizationCode(seed: nil), clientAuth: .publicClient(id: "cli"))
        XCTAssertNil(LoginPaths.loginURL(for: identity))
        identity.redirectUri = HTTPURL(scheme: .http, host: "127.0.0.1", port: 8180, path: "/cb")
        XCTAssertEqual(LoginPaths.loginURL(for: identity), "http://127.0.0.1:8180/.oauth-relay/login/me")
        identity.redirectUri = HTTPURL(scheme: .https, host: "::1", port: 443, path: "/cb")
        XCTAssertEqual(LoginPaths.loginURL(for: identity), "https://[::1]/.oauth-relay/login/me")
    }

    /// A request's view for the login pages, from its head (an origin-form target: Proxy's
    /// `RequestTarget` reads the others).
    private func request(_ lines: [String], overTLS: Bool = false) -> LoginRequest {
        let parser = HTTP1Parser(kind: .request, limits: HeaderLimits(maxHeadBytes: 8192, maxFieldCount: 32))
        let result = Array((lines.map { $0 + "\r\n" }.joined() + "\r\n").utf8).withUnsafeBytes { parser.feed($0) }
        if case .failed(let error) = result { XCTFail("the parser rejected the request: \(error)") }
        let target = parser.head.target
        let query = target.firstIndex(of: UInt8(ascii: "?")) ?? target.count
        return LoginRequest(head: parser.head, path: UnsafeRawBufferPointer(rebasing: target[..<query]),
                            queryWithMark: UnsafeRawBufferPointer(rebasing: target[query...]), authority: nil, overTLS: overTLS)
    }

    func testTheOriginIsSpelledOneWay() {
        XCTAssertEqual(request(["GET / HTTP/1.1", "Host: LocalHost:8180"]).origin, "http://localhost:8180")
        XCTAssertEqual(request(["GET / HTTP/1.1", "Host: 127.0.0.1"]).origin, "http://127.0.0.1:80")
        XCTAssertEqual(request(["GET / HTTP/1.1", "Host: [::1]"], overTLS: true).origin, "https://[::1]:443")
        XCTAssertNil(request(["GET / HTTP/1.1", "Host: [zz]:80"]).origin)
    }

    func testALoginStartABrowserSendsForAnotherSiteIsRefused() {
        let navigation = ["Sec-Fetch-Mode: navigate", "Sec-Fetch-User: ?1"]
        func refusal(_ fields: [String]) -> String? {
            request(["GET /.oauth-relay/login/me HTTP/1.1", "Host: 127.0.0.1:8180"] + fields).loginStartRefusal
        }
        XCTAssertNil(refusal([]), "curl and scripts send no Fetch Metadata")
        XCTAssertNil(refusal(["Sec-Fetch-Site: none", "Sec-Fetch-Dest: document"] + navigation), "typed or bookmarked")
        XCTAssertNil(refusal(["Sec-Fetch-Site: same-origin", "Sec-Fetch-Dest: document"] + navigation), "a link on the relay's page")
        XCTAssertNil(refusal(["Sec-Fetch-Site: same-site", "Sec-Fetch-Dest: document"]), "an app on localhost:3000")
        XCTAssertNotNil(refusal(["Sec-Fetch-Site: cross-site", "Sec-Fetch-Dest: document"] + navigation), "a link on another site")
        XCTAssertNotNil(refusal(["sec-fetch-site: Cross-Site"]), "names and values in any case")
        XCTAssertNotNil(refusal(["Sec-Fetch-Site: same-origin", "Sec-Fetch-Dest: image"]), "an <img> on the relay's own origin")
        XCTAssertNotNil(refusal(["Sec-Fetch-Dest: iframe"]), "a frame")
        XCTAssertNotNil(refusal(["Sec-Fetch-Site: cross-site", "Sec-Fetch-Dest: empty"]), "fetch() from another site")
    }

    func testAHeadRequestNeverStartsALogin() {
        let head = request(["HEAD /.oauth-relay/login/me HTTP/1.1", "Host: 127.0.0.1:8180"])
        XCTAssertEqual(head.loginStartRefusal, "a HEAD request only asks what the page would be")
        XCTAssertNil(request(["GET /.oauth-relay/login/me HTTP/1.1", "Host: 127.0.0.1:8180"]).loginStartRefusal)
    }

    func testPagesEscapeWhatTheyShow() {
        let page = LoginPage(title: "<script>", lines: ["a & \"b\""], links: [("x", "/p?a=1&b=\"2\"")])
        XCTAssertFalse(page.html.contains("<script>"))
        XCTAssertTrue(page.html.contains("&lt;script&gt;"))
        XCTAssertTrue(page.html.contains("a &amp; &quot;b&quot;"))
        XCTAssertTrue(page.html.contains("href=\"/p?a=1&amp;b=&quot;2&quot;\""))
    }
}
