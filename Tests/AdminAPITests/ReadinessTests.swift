@testable import AdminAPI
import OAuth2
import XCTest

/// Which identities `/readyz` waits for.
final class ReadinessTests: XCTestCase {
    private func ready(_ state: IdentityStatus.State, valid: Bool = false, perCaller: Bool = false, interactive: Bool = false,
                       endpoint: Bool = true) -> Bool {
        AdminServer.isReady(state: state, hasValidToken: valid, perCaller: perCaller, interactive: interactive, knowsTokenEndpoint: endpoint)
    }

    func testAPerCallerIdentityIsReadyOnceItKnowsItsTokenEndpointAndIsNotFailing() {
        XCTAssertTrue(ready(.perCaller, perCaller: true))
        XCTAssertFalse(ready(.perCaller, perCaller: true, endpoint: false), "discovery not done yet")
        XCTAssertFalse(ready(.failing, perCaller: true), "discovery failing")
    }

    func testOtherIdentitiesWaitForAValidTokenUnlessInteractive() {
        XCTAssertTrue(ready(.valid, valid: true))
        XCTAssertFalse(ready(.pending))
        XCTAssertTrue(ready(.needsLogin, interactive: true))
    }
}
