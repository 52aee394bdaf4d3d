import Endpoints
import XCTest

/// One loopback rule for a host as configured or parsed from a URL (a string, IPv6 without
/// brackets) and for a Host header's bytes (Routing's `HostName`): the cases below hold for both
/// forms, so the check of an `http://` token URL and the DNS-rebinding check cannot disagree.
final class LoopbackRuleTests: XCTestCase {
    private let loopback = ["localhost", "LocalHost", "app.localhost", "a.b.localhost", "127.0.0.1", "127.255.0.9", "::1",
                            "0:0:0:0:0:0:0:1", "::ffff:127.0.0.1", "::1%lo"]
    private let notLoopback = ["", "localhost.evil.example", "127.0.0.1.evil.example", "evillocalhost", ".localhost",
                               "128.0.0.1", "127.0.0.01", "127.0.0", "10.0.0.1", "::2", "::ffff:10.0.0.1", "example.com", "[::1]"]

    func testLoopbackHosts() {
        for host in loopback { XCTAssertTrue(HostSyntax.isLoopback(host), host) }
    }

    func testOtherHostsAreNotLoopback() {
        for host in notLoopback { XCTAssertFalse(HostSyntax.isLoopback(host), host) }
    }

    func testTheByteFormAgreesWithTheStringForm() {
        for host in loopback + notLoopback where !host.contains("%") {
            let bytes = Array(host.utf8)
            let isLoopback = bytes.withUnsafeBytes { HostSyntax.isLoopback($0, 0..<$0.count, isIPv6: host.contains(":")) }
            XCTAssertEqual(isLoopback, HostSyntax.isLoopback(host), host)
        }
    }
}
