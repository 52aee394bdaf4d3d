import Routing
import XCTest

private func loopback(_ host: String) -> Bool {
    Array(host.utf8).withUnsafeBytes { HostName.isLoopback($0, HostName.bounds(in: $0)) }
}

private func contains(_ set: HostNameSet, _ host: String) -> Bool {
    Array(host.utf8).withUnsafeBytes { set.contains($0, HostName.bounds(in: $0)) }
}

private func ipv4(_ host: String) -> [UInt8]? {
    Array(host.utf8).withUnsafeBytes { bytes in
        HostName.ipv4Octets(bytes, HostName.bounds(in: bytes)).map { [$0.0, $0.1, $0.2, $0.3] }
    }
}

/// Which Host values name this machine alone: the rule that keeps DNS-rebound names out of a
/// loopback listener (BrowserSafety's ListenerHosts).
final class HostNameTests: XCTestCase {
    func testLoopbackNamesAndAddressesWithAnyPortCaseAndOneTrailingDot() {
        for host in ["localhost", "localhost:8180", "LOCALHOST", "LocalHost:1", "localhost.", "localhost.:8180",
                     "app.localhost", "a.b.localhost:3000", "APP.LOCALHOST.",
                     "127.0.0.1", "127.0.0.1:8180", "127.1.2.3", "127.255.255.255:80", "127.0.0.1.",
                     "[::1]", "[::1]:8180", "[0:0:0:0:0:0:0:1]", "[0000::0001]:1", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]:8180",
                     " localhost:8180 "] {
            XCTAssertTrue(loopback(host), host)
        }
    }

    func testSuffixTricksAndOtherAddressesAreForeign() {
        for host in ["evil.example", "localhost.evil.example", "localhost.evil.example:8180", "127.0.0.1.evil.example",
                     "127.0.0.1.nip.io", "localhostx", "xlocalhost", ".localhost", "localhost..", "evil-localhost",
                     "128.0.0.1", "10.0.0.1", "0.0.0.0", "126.255.255.255",
                     // Spellings inet_aton reads as 127.0.0.1 but browsers never send: refused, not guessed at.
                     "127.1", "0x7f.0.0.1", "0177.0.0.1", "127.000.000.001", "2130706433", "127.0.0.256", "127.0.0.1.1",
                     "[::2]", "[::]", "[::ffff:10.0.0.1]", "[fe80::1]", "[::1", "[]", "[:;:0.localhost", "",
                     "xn--localhost-9za", "l\u{00F6}calhost", "localhost\u{3002}"] {
            XCTAssertFalse(loopback(host), host)
        }
    }

    func testIPv4IsFourDecimalNumbersWithoutLeadingZeros() {
        XCTAssertEqual(ipv4("10.1.2.3:80"), [10, 1, 2, 3])
        XCTAssertEqual(ipv4("0.0.0.0"), [0, 0, 0, 0])
        XCTAssertEqual(ipv4("255.255.255.255."), [255, 255, 255, 255])
        for host in ["1.2.3", "1.2.3.4.5", "01.2.3.4", "1.2.3.256", "1..3.4", "1.2.3.4a", "a.b.c.d", "", "[::1]"] {
            XCTAssertNil(ipv4(host), host)
        }
    }

    func testIPv6LiteralsAreToldByTheirBrackets() {
        for (host, literal) in [("[::1]:80", true), ("[fe80::1]", true), ("::1", false), ("localhost", false)] {
            XCTAssertEqual(Array(host.utf8).withUnsafeBytes { HostName.isIPv6Literal($0, HostName.bounds(in: $0)) }, literal, host)
        }
    }

    func testSetMatchesExactNamesAndNamesBelowAWildcardInAnyCase() throws {
        let set = HostNameSet([try HostPattern.parse("orders.local"), try HostPattern.parse("*.dev.example"),
                               try HostPattern.parse("[fd00::7]"), try HostPattern.parse("10.0.0.7")])
        for host in ["orders.local", "ORDERS.LOCAL:8180", "orders.local.", "a.dev.example", "a.b.dev.example:1",
                     "[fd00::7]:8180", "10.0.0.7"] {
            XCTAssertTrue(contains(set, host), host)
        }
        for host in ["dev.example", "orders.local.evil", "evil.orders.local", "xdev.example", "", "10.0.0.8", "[fd00::8]"] {
            XCTAssertFalse(contains(set, host), host)
        }
        XCTAssertTrue(HostNameSet([]).isEmpty)
        XCTAssertFalse(contains(HostNameSet([]), "orders.local"))
    }
}
