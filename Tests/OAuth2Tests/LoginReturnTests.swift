import OAuth2
import XCTest

/// The one check of where a browser goes after a login: a path on the relay, never another site
/// and never the relay's own pages, however the path is spelled.
final class LoginReturnTests: XCTestCase {
    func testAPathOnTheRelayIsKeptWithItsQuery() {
        XCTAssertEqual(LoginReturn.path("/orders?id=1&next=/.oauth-relay/x"), "/orders?id=1&next=/.oauth-relay/x")
        XCTAssertEqual(LoginReturn.path("/"), "/")
        XCTAssertEqual(LoginReturn.path("/a/./b/../c"), "/a/c", "normalized as the relay routes it")
        XCTAssertEqual(LoginReturn.path("/%2F%2Fevil.example"), "/%2F%2Fevil.example", "an escaped slash is no slash")
    }

    func testAnotherSiteIsNeverReturnedTo() {
        for open in ["https://evil.example/", "http:/evil.example", "//evil.example/x", "/\\evil.example", "/a/..//evil.example",
                     "/./" + "/evil.example", "orders", "", "?x=1"] {
            XCTAssertNil(LoginReturn.path(open), open)
        }
    }

    func testTheRelaysOwnPagesAreNeverReturnedTo() {
        for own in ["/.oauth-relay/login/me", "/.oauth-relay", "/.oauth-relay/", "/x/../.oauth-relay/status/me",
                    "/./.oauth-relay/callback?code=1", "/%2Eoauth-relay/login/me", "/%2eoauth-relay/login/me"] {
            XCTAssertNil(LoginReturn.path(own), own)
        }
    }

    func testControlCharactersSpacesAndBadEscapesAreRefused() {
        for bad in ["/a b", "/a\tb", "/a\r\nSet-Cookie: x", "/a%zz", "/caf\u{e9}", "/a?b c"] {
            XCTAssertNil(LoginReturn.path(bad), bad)
        }
    }
}
