@testable import AdminAPI
import BrowserSafety
import Config
import LocalHTTP
import XCTest

/// The admin listener answers curl, probes and the relay's own commands, never a web page: a
/// page could start a device login there, read its code under a rebound name and approve it
/// with its own account.
final class AdminGateTests: XCTestCase {
    private let loopback = ListenerHosts(address: HostPort(host: "127.0.0.1", port: 9180), listenerHosts: nil, config: RelayConfig())

    private func refusal(_ method: String, _ headers: [(String, String)], hosts: ListenerHosts? = nil) -> AdminGate.Refusal? {
        AdminGate.refusal(LocalRequest(method: method, target: "/identities/tv/login", headers: headers.map { (name: $0.0, value: $0.1) }, body: []),
                          hosts: hosts ?? loopback)
    }

    func testCurlProbesAndTheRelaysCommandsGetThrough() {
        XCTAssertNil(refusal("POST", [("Host", "127.0.0.1:9180")]))
        XCTAssertNil(refusal("DELETE", [("host", "localhost:9180"), ("User-Agent", "curl/7.88")]))
        XCTAssertNil(refusal("GET", []), "HTTP/1.0 without Host")
    }

    func testAPersonReadingTheAdminPagesInATabGetsThrough() {
        XCTAssertNil(refusal("GET", [("Host", "127.0.0.1:9180"), ("Sec-Fetch-Site", "none"), ("Sec-Fetch-Mode", "navigate"),
                                      ("Sec-Fetch-Dest", "document")]))
        XCTAssertNil(refusal("GET", [("Host", "127.0.0.1:9180"), ("Sec-Fetch-Site", "cross-site"), ("Sec-Fetch-Mode", "navigate"),
                                      ("Sec-Fetch-Dest", "document")]), "a link followed: reading changes nothing")
    }

    func testWhatAPageMakesABrowserSendIsRefused() {
        let host = ("Host", "127.0.0.1:9180")
        XCTAssertEqual(refusal("POST", [host, ("Origin", "https://evil.example"), ("Sec-Fetch-Site", "cross-site"),
                                        ("Sec-Fetch-Mode", "no-cors")]), .crossSite(origin: "https://evil.example"))
        XCTAssertEqual(refusal("POST", [host, ("Origin", "null")]), .crossSite(origin: "null"))
        XCTAssertEqual(refusal("POST", [host, ("Sec-Fetch-Site", "cross-site"), ("Sec-Fetch-Mode", "navigate"),
                                        ("Sec-Fetch-Dest", "document")]), .crossSite(origin: nil), "a form POST")
        XCTAssertEqual(refusal("GET", [host, ("Sec-Fetch-Site", "same-site"), ("Sec-Fetch-Mode", "cors"), ("Origin", "http://localhost:3000")]),
                       .crossSite(origin: "http://localhost:3000"), "fetch() from another port reads /identities")
        XCTAssertEqual(refusal("OPTIONS", [host, ("Origin", "https://evil.example"), ("Access-Control-Request-Method", "DELETE")]),
                       .crossSite(origin: "https://evil.example"))
        XCTAssertEqual(refusal("POST", [host, ("Sec-Fetch-Site", "same-origin"), ("sec-fetch-site", "same-origin")]), .crossSite(origin: nil))
    }

    func testARebindingPageIsMisdirected() {
        XCTAssertEqual(refusal("GET", [("Host", "evil.example:9180")]), .host("evil.example:9180"))
        XCTAssertEqual(refusal("POST", [("Host", "localhost.evil.example")]), .host("localhost.evil.example"))
        let open = ListenerHosts(address: HostPort(host: "0.0.0.0", port: 9180), listenerHosts: nil, config: RelayConfig())
        XCTAssertNil(refusal("GET", [("Host", "relay.pod.cluster.local:9180")], hosts: open), "a probe of a pod's admin port")
    }
}
