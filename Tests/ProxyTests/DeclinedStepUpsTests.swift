import OAuth2
@testable import Proxy
import XCTest

/// A worker answers a challenge its identity declined before, to the same token, by itself.
final class DeclinedStepUpsTests: XCTestCase {
    private let write = StepUp(scope: ["orders.write"])

    func testTheSameChallengeToTheSameTokenIsKnownDeclined() {
        var declined = DeclinedStepUps()
        let token = ExchangeDriver.token("a")
        XCTAssertFalse(declined.contains(slot: 0, token: token, stepUp: write))
        declined.note(slot: 0, token: token, stepUp: write)
        XCTAssertTrue(declined.contains(slot: 0, token: token, stepUp: write))
        XCTAssertFalse(declined.contains(slot: 0, token: ExchangeDriver.token("a"), stepUp: write), "another token (a login replaced it)")
        XCTAssertFalse(declined.contains(slot: 0, token: token, stepUp: StepUp(scope: ["orders.admin"])), "another challenge")
        XCTAssertFalse(declined.contains(slot: 1, token: token, stepUp: write), "another identity")
        declined.keepOnly(slots: [1])
        XCTAssertFalse(declined.contains(slot: 0, token: token, stepUp: write), "a reload removed the identity")
    }

    func testAMaxAgeStepUpIsNotKeptAsTimeMayChangeItsAnswer() {
        var declined = DeclinedStepUps()
        let token = ExchangeDriver.token("a")
        declined.note(slot: 0, token: token, stepUp: StepUp(maxAge: 60))
        XCTAssertFalse(declined.contains(slot: 0, token: token, stepUp: StepUp(maxAge: 60)))
    }
}
