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

    func testARoutePlanOfASharedIdentityDoesNotStepUp() {
        let one = route("a", to: "https://api.example.com", identity: "me")
        XCTAssertTrue(RoutePlan(route: one, interactiveIdentity: true).stepsUp)
        XCTAssertFalse(RoutePlan(route: one, interactiveIdentity: true, stepsUpFromUpstream: false).stepsUp)
        XCTAssertFalse(RoutePlan(route: one, interactiveIdentity: false).stepsUp)
    }
}
