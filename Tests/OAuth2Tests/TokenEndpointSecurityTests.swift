import Config
import Endpoints
import OAuth2
import XCTest

/// Plain `http://` token URLs: loopback only, unless `allowInsecureTokenUrl`.
final class TokenEndpointSecurityTests: XCTestCase {
    private func identity(_ url: String, allowInsecure: Bool = false, name: String = "orders") throws -> Identity {
        var identity = Identity(name: name, tokenUrl: try XCTUnwrap(HTTPURL(parsing: url)))
        identity.allowInsecureTokenUrl = allowInsecure
        return identity
    }

    func testHTTPSIsAlwaysAccepted() throws {
        XCTAssertEqual(try TokenEndpointSecurity.check(identity("https://idp.example.com/token")), .https)
    }

    func testHTTPToLoopbackIsAccepted() throws {
        for url in ["http://localhost:8080/t", "http://idp.localhost/t", "http://127.0.0.1/t", "http://127.1.2.3/t",
                    "http://[::1]:9000/t", "http://[0:0:0:0:0:0:0:1]/t", "http://[::ffff:127.0.0.1]/t"] {
            XCTAssertEqual(try TokenEndpointSecurity.check(identity(url)), .loopbackHTTP, url)
        }
    }

    func testHTTPToAnyOtherHostIsRejectedWithTheConfigPath() throws {
        for url in ["http://idp.example.com/token", "http://10.0.0.1/t", "http://128.0.0.1/t", "http://[::2]/t",
                    "http://localhost.example.com/t", "http://[::ffff:10.0.0.1]/t"] {
            XCTAssertThrowsError(try TokenEndpointSecurity.check(identity(url)), url) { error in
                let message = String(describing: error)
                XCTAssertTrue(message.hasPrefix("$.identities.orders.tokenUrl: http://"), message)
                XCTAssertTrue(message.contains("allowInsecureTokenUrl"), message)
            }
        }
    }

    func testAllowInsecureTokenURLAcceptsHTTPAndAsksForAWarning() throws {
        XCTAssertEqual(try TokenEndpointSecurity.check(identity("http://idp.example.com/t", allowInsecure: true)), .insecureHTTPAllowed)
    }

    func testErrorShowsNoQueryAndBracketsAnUnusualIdentityName() throws {
        XCTAssertThrowsError(try TokenEndpointSecurity.check(identity("http://idp.example.com/t?key=k3y", name: "a.b"))) { error in
            XCTAssertEqual((error as? InsecureTokenURL)?.path, #"$.identities["a.b"].tokenUrl"#)
            XCTAssertFalse(String(describing: error).contains("k3y"))
        }
    }
}
