import Config
@testable import Proxy
import XCTest

/// Only an identity whose routes all go to one upstream origin is stepped up by its upstream's
/// challenges: a shared one would carry one upstream's scope to the others.
final class StepUpRoutesTests: XCTestCase {
    private func route(_ name: String, to upstream: String, identity: String?) -> Route {
        var made = ProxyTests.route(to: upstream)
        made.name = name
        made.identity = identity
        return made
    }

    func testAnIdentityWithRoutesToSeveralOriginsIsShared() {
        let routes = [
            route("a", to: "https://api.example.com/v1", identity: "me"),
            route("b", to: "https://API.example.com:443/v2", identity: "me"),
            route("c", to: "https://other.example.com", identity: "shared"),
            route("d", to: "https://api.example.com", identity: "shared"),
            route("e", to: "http://api.example.com", identity: "scheme"),
            route("f", to: "https://api.example.com", identity: "scheme"),
            route("g", to: "https://api.example.com", identity: nil),
        ]
        XCTAssertEqual(StepUpRoutes.sharedAcrossOrigins(routes), ["scheme", "shared"])
    }

    /// The identities whose routes' `scheme://authority`, lowercased, differ: the origins
    /// written as text (the reading before they were compared as values).
    private func sharedAsText(_ routes: [Route]) -> [String] {
        var origins: [String: Set<String>] = [:]
        for route in routes {
            guard let identity = route.identity else { continue }
            origins[identity, default: []].insert("\(route.upstream.scheme.rawValue)://\(route.upstream.authority.lowercased())")
        }
        return origins.filter { $0.value.count > 1 }.map(\.key).sorted()
    }

    func testOriginsComparedAsValuesGiveWhatTheirTextGives() {
        let upstreams = ["https://api.example.com", "https://API.example.com:443/v2", "https://api.example.com:8443", "http://api.example.com",
                         "http://api.example.com:80/x", "https://[::1]", "https://[::1]:443", "https://[::1]:8443", "http://127.0.0.1:9001"]
        let identities: [String?] = ["a", "b", "c", "d", nil]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<300 {
            let routes = (0..<Int.random(in: 0...6, using: &generator)).map { index in
                route("r\(index)", to: upstreams.randomElement(using: &generator)!, identity: identities.randomElement(using: &generator)!)
            }
            XCTAssertEqual(StepUpRoutes.sharedAcrossOrigins(routes), sharedAsText(routes))
        }
    }

    func testARoutePlanOfASharedIdentityDoesNotStepUp() {
        let one = route("a", to: "https://api.example.com", identity: "me")
        XCTAssertTrue(RoutePlan(route: one, interactiveIdentity: true).stepsUp)
        XCTAssertFalse(RoutePlan(route: one, interactiveIdentity: true, stepsUpFromUpstream: false).stepsUp)
        XCTAssertFalse(RoutePlan(route: one, interactiveIdentity: false).stepsUp)
    }
}
