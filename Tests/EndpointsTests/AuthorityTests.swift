import Endpoints
import XCTest

/// A Host header's authority: the host, bracketed when IPv6, and the port unless it is the default.
final class AuthorityTests: XCTestCase {
    func testAuthorityIsTheHostThenThePortUnlessDefault() {
        let hosts = ["api.example.com", "127.0.0.1", "::1", "fe80::1%eth0", "x"]
        let ports: [UInt16] = [1, 80, 443, 8080, 65535]
        for host in hosts {
            for port in ports {
                for defaultPort: UInt16 in [80, 443] {
                    let bracketed = host.contains(":") ? "[\(host)]" : host
                    let expected = port == defaultPort ? bracketed : "\(bracketed):\(port)"
                    XCTAssertEqual(HostSyntax.authority(host: host, port: port, defaultPort: defaultPort), expected)
                }
            }
        }
    }
}
