import Config
import Endpoints
import XCTest

/// `host:port` addresses and upstream / token URLs.
final class AddressTests: XCTestCase {
    func testHostPortParsesIPv4AndName() {
        XCTAssertEqual(HostPort(parsing: "0.0.0.0:80"), HostPort(host: "0.0.0.0", port: 80))
        XCTAssertEqual(HostPort(parsing: "localhost:8180"), HostPort(host: "localhost", port: 8180))
    }

    func testIPv6ListenAddressIsStoredWithoutBrackets() throws {
        let config = try decodeConfig(#"{ "listen": "[::1]:8180", "admin": "[fe80::1%eth0]:0" }"#)
        XCTAssertEqual(config.listen, HostPort(host: "::1", port: 8180))
        XCTAssertEqual(config.admin, HostPort(host: "fe80::1%eth0", port: 0))
        XCTAssertEqual(config.listen.description, "[::1]:8180")
    }

    func testPortZeroIsAllowedForAnEphemeralPort() {
        XCTAssertEqual(HostPort(parsing: "127.0.0.1:0")?.port, 0)
    }

    func testMalformedHostPortsAreRejected() {
        for text in ["127.0.0.1", "127.0.0.1:", ":8180", "127.0.0.1:65536", "127.0.0.1:http", "[::1]8180", "[::1", "::1:80",
                     "[nothex]:80", "bad host:80", "127.0.0.1:-1"] {
            XCTAssertNil(HostPort(parsing: text), text)
        }
    }

    func testUpstreamDefaultPortsFollowTheScheme() {
        XCTAssertEqual(UpstreamURL(parsing: "http://svc")?.port, 80)
        XCTAssertEqual(UpstreamURL(parsing: "https://svc")?.port, 443)
        XCTAssertEqual(UpstreamURL(parsing: "HTTPS://SVC:8443")?.port, 8443)
        XCTAssertEqual(UpstreamURL(parsing: "HTTPS://SVC:8443")?.host, "svc")
    }

    func testUpstreamBasePathDropsTrailingSlash() {
        XCTAssertEqual(UpstreamURL(parsing: "http://svc")?.basePath, "")
        XCTAssertEqual(UpstreamURL(parsing: "http://svc/")?.basePath, "")
        XCTAssertEqual(UpstreamURL(parsing: "http://svc/v1/")?.basePath, "/v1")
        XCTAssertEqual(UpstreamURL(parsing: "http://svc/v1/api")?.basePath, "/v1/api")
    }

    func testUpstreamIPv6HostIsStoredWithoutBrackets() {
        let url = UpstreamURL(parsing: "http://[::1]:9001/base")
        XCTAssertEqual(url, UpstreamURL(scheme: .http, host: "::1", port: 9001, basePath: "/base"))
        XCTAssertEqual(url?.authority, "[::1]:9001")
        XCTAssertEqual(url?.description, "http://[::1]:9001/base")
    }

    func testUpstreamRejectsWhatCannotBeForwarded() {
        for text in ["svc:80", "ws://svc", "http://", "http://:80", "http://u@svc", "http://svc?a=1", "http://svc#f",
                     "http://svc:0", "http://svc:99999", "http://svc/a b", "http://svc/%zz"] {
            XCTAssertNil(UpstreamURL(parsing: text), text)
        }
    }

    func testTokenURLKeepsItsQuery() {
        let url = HTTPURL(parsing: "https://idp.example.com:8443/token?tenant=acme")
        XCTAssertEqual(url?.requestTarget, "/token?tenant=acme")
        XCTAssertEqual(url?.authority, "idp.example.com:8443")
        XCTAssertEqual(url?.description, "https://idp.example.com:8443/token?tenant=acme")
    }

    func testTokenURLWithoutPathGetsSlash() {
        XCTAssertEqual(HTTPURL(parsing: "http://idp")?.path, "/")
    }
}
