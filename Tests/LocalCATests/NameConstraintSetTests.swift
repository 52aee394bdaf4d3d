@testable import LocalCA
import Routing
import XCTest

/// The names the CA is constrained to, as the extension's configuration text, and the exact
/// rule leaves are minted by.
final class NameConstraintSetTests: XCTestCase {
    /// The DNS subtrees sorted (the extension is the same whatever the routes' order), e-mail
    /// addresses and URIs confined to `.invalid`.
    func testExactAndWildcardHostsMakePermittedDNSSubtreesAndEveryAddressIsExcluded() throws {
        let set = try NameConstraintSet(hosts: [.exact("api.test"), .wildcard(suffix: "example.com")])
        XCTAssertEqual(set.permittedDNSNames, ["api.test", ".example.com"])
        XCTAssertEqual(set.extensionValue,
                       "critical,permitted;DNS:.example.com,permitted;DNS:api.test,permitted;email:.invalid,permitted;URI:.invalid,"
                           + "excluded;IP:0.0.0.0/0.0.0.0,excluded;IP:::/::")
    }

    func testDuplicatesAreKeptOnce() throws {
        let set = try NameConstraintSet(hosts: [.exact("api.test"), .exact("api.test")])
        XCTAssertEqual(set.hosts, [.exact("api.test")])
    }

    func testRefusals() {
        let table: [([HostPattern], LocalCAError)] = [
            ([], .noHosts),
            ([.exact("10.0.0.7")], .notAHostName("10.0.0.7")),
            ([.exact("::1")], .notAHostName("[::1]")),
            ([.exact("a,permitted;DNS:evil.com")], .notAHostName("[a,permitted;DNS:evil.com]")),
            ([.exact("a:b")], .notAHostName("[a:b]")),
            ([.exact("a,b.test")], .notAHostName("a,b.test")),
            ([.exact("api.test"), .wildcard(suffix: "x..y")], .notAHostName("*.x..y")),
            ([.exact("")], .notAHostName("")),
        ]
        for (hosts, expected) in table {
            XCTAssertThrowsError(try NameConstraintSet(hosts: hosts), "\(hosts)") { error in
                XCTAssertEqual(error as? LocalCAError, expected, "\(hosts)")
            }
        }
    }

    func testPermitsExactNamesAndSubdomainsOfWildcardsOnly() throws {
        let set = try NameConstraintSet(hosts: [.exact("api.test"), .wildcard(suffix: "example.com")])
        let table: [(String, Bool)] = [
            ("api.test", true), ("a.api.test", false), ("xapi.test", false),
            ("a.example.com", true), ("a.b.example.com", true), ("example.com", false), ("evil-example.com", false),
            (".example.com", false), ("a..example.com", false), ("other.test", false), ("", false),
        ]
        for (host, permitted) in table {
            XCTAssertEqual(set.permits(host), permitted, host)
        }
    }
}
