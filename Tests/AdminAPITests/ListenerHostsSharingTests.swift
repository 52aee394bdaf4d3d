import BrowserSafety
import Config
import Foundation
import XCTest

/// The listeners without `hosts` of their own share one set of names (`forListeners`): each
/// serves exactly what a rule built for it alone serves.
final class ListenerHostsSharingTests: XCTestCase {
    private let requestHosts = ["127.0.0.1", "localhost:8180", "svc.example", "SVC.example:80", "a.tenant.example", "tenant.example",
                                "other.example", "10.1.2.3", "[fe80::1]", "login.example", "named.example", "x.named.example", ""]

    private func config(hosts: String?) throws -> RelayConfig {
        let hostsMember = hosts.map { #""hosts": \#($0), "# } ?? ""
        let json = #"{ \#(hostsMember)"routes": [ { "upstream": "http://127.0.0.1:9001", "match": { "host": "svc.example" } }, "#
            + #"{ "upstream": "http://127.0.0.1:9001", "match": { "host": "*.tenant.example" } }, "#
            + #"{ "upstream": "http://127.0.0.1:9001", "match": { "pathPrefix": "/p/" } } ] }"#
        return try ConfigLoader.decode(json: Data(json.utf8), baseDirectory: "/nonexistent", environment: [:])
    }

    func testEachSharedRuleServesWhatItsOwnRuleServes() throws {
        let addresses = [HostPort(host: "127.0.0.1", port: 8180), HostPort(host: "0.0.0.0", port: 8180), HostPort(host: "::1", port: 9180),
                         HostPort(host: "10.0.0.5", port: 9180)]
        for hosts in [nil, #"["named.example", "*.named.example"]"#] {
            let config = try config(hosts: hosts)
            for first in addresses {
                for second in addresses {
                    let shared = ListenerHosts.forListeners(on: [first, second], config: config)
                    XCTAssertEqual(shared.count, 2)
                    for (address, rule) in zip([first, second], shared) {
                        let own = ListenerHosts(address: address, listenerHosts: nil, config: config)
                        for host in requestHosts {
                            let (sharedServes, ownServes) = Array(host.utf8).withUnsafeBytes { (rule.serves($0), own.serves($0)) }
                            XCTAssertEqual(sharedServes, ownServes, "\(host) on \(address), hosts \(hosts ?? "unset")")
                        }
                    }
                }
            }
        }
    }
}
