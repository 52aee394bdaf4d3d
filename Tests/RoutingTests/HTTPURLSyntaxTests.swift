import Endpoints
import Routing
import XCTest

/// Absolute http(s) URLs read from text (config values, an IdP's published URLs).
final class HTTPURLSyntaxTests: XCTestCase {
    private func message(_ text: String, allowsQuery: Bool = true) -> String? {
        do {
            let url = try HTTPURL(absolute: text, allowsQuery: allowsQuery)
            XCTFail("expected an error, got \(url)")
            return nil
        } catch {
            return error.message
        }
    }

    func testHostPortPathAndQuery() throws {
        let url = try HTTPURL(absolute: "HTTPS://IdP.Example.com:8443/realms/a/../b/token?tenant=acme")
        XCTAssertEqual(url, HTTPURL(scheme: .https, host: "idp.example.com", port: 8443, path: "/realms/b/token", query: "tenant=acme"))
        XCTAssertEqual(try HTTPURL(absolute: "http://[::1]:9000").path, "/")
        XCTAssertEqual(try HTTPURL(absolute: "http://[::1]:9000").host, "::1")
        XCTAssertEqual(try HTTPURL(absolute: "http://localhost").port, 80)
    }

    func testRefusals() {
        XCTAssertEqual(message("idp.example.com/token"), "\"idp.example.com/token\" is not an absolute URL (expected http://… or https://…)")
        XCTAssertEqual(message("javascript://x"), "unsupported scheme \"javascript\" in \"javascript://x\" (expected http or https)")
        XCTAssertEqual(message("https://user:pw@idp/"), "user info (user:password@) is not allowed in a URL; put credentials in an identity")
        XCTAssertEqual(message("https://idp/#x"), "a fragment (#…) is not allowed in \"https://idp/#x\"")
        XCTAssertEqual(message("https://idp/?a=1", allowsQuery: false), "a query (?…) is not allowed in \"https://idp/?a=1\"")
        XCTAssertNotNil(message("https://idp/?a b"))
        XCTAssertEqual(message("https://idp:0/"), "invalid port \"0\" in \"https://idp:0/\" (expected a number 1-65535)")
        XCTAssertEqual(message("https://idp:99999/"), "invalid port \"99999\" in \"https://idp:99999/\" (expected a number 1-65535)")
        XCTAssertEqual(message("https://:443/"), "missing host in \"https://:443/\"")
        XCTAssertEqual(message("https://[::1/"), "unclosed \"[\" in \"https://[::1/\"")
        XCTAssertEqual(message("https://id p/"), "\"id p\" is not a valid host name or address")
    }
}
