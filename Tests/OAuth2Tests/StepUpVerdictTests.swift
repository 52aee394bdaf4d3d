@testable import OAuth2
import XCTest

/// A step-up login's token judged against what the step-up asked for: less scope granted, no
/// `acr` among those asked, no `auth_time` for a `max_age` — unmet.
final class StepUpVerdictTests: XCTestCase {
    private func verdict(_ asked: StepUp, scope: String?, _ shown: LoginAuthentication? = nil) -> StepUpVerdict {
        StepUpVerdict(asked: asked, grantedScope: scope, authentication: shown)
    }

    func testTheScopeGrantedDecides() {
        let asked = StepUp(scope: ["orders.write", "orders.admin"])
        XCTAssertEqual(verdict(asked, scope: nil), StepUpVerdict(asked: asked, grantedScope: "orders.write orders.admin", authentication: nil),
                       "RFC 6749 §5.1: no scope in the answer, the scope asked for")
        XCTAssertNil(verdict(asked, scope: nil).unmet)
        let cut = verdict(asked, scope: "openid orders.write")
        XCTAssertEqual(cut.granted, StepUp(scope: ["orders.write"]))
        XCTAssertEqual(cut.unmet, "the IdP granted less scope than asked for")
    }

    func testAnAcrAskedForMustBeNamedByTheCheckedIDToken() {
        let asked = StepUp(acrValues: ["urn:mfa", "urn:hw"])
        XCTAssertNil(verdict(asked, scope: nil, LoginAuthentication(acr: "urn:hw")).unmet)
        for shown in [nil, LoginAuthentication(), LoginAuthentication(acr: "urn:pwd")] {
            XCTAssertEqual(verdict(asked, scope: nil, shown).unmet, "no checked ID token names one of the acr_values asked for")
        }
    }

    func testAMaxAgeNeedsAnAuthTime() {
        let asked = StepUp(maxAge: 60)
        XCTAssertNil(verdict(asked, scope: nil, LoginAuthentication(authTime: 5)).unmet)
        XCTAssertEqual(verdict(asked, scope: nil, LoginAuthentication(acr: "x")).unmet, "no checked ID token gives the auth_time max_age asks for")
        XCTAssertNotNil(verdict(asked, scope: nil).unmet)
    }
}
