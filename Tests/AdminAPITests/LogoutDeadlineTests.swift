@testable import AdminAPI
import LocalHTTP
import XCTest

/// How long `DELETE /identities/NAME/token` waits for the shared store's removal, and what it
/// answers past that (the route's deadline; LocalAnswerDeadlineTests run such a deadline).
final class LogoutDeadlineTests: XCTestCase {
    func testTheWaitIsTheStoreTimeoutAndASecondAndFiveSecondsAtLeast() {
        XCTAssertEqual(AdminServer.logoutWaitMilliseconds(storeTimeoutMilliseconds: nil), 5000)
        XCTAssertEqual(AdminServer.logoutWaitMilliseconds(storeTimeoutMilliseconds: 200), 5000)
        XCTAssertEqual(AdminServer.logoutWaitMilliseconds(storeTimeoutMilliseconds: 4000), 5000)
        XCTAssertEqual(AdminServer.logoutWaitMilliseconds(storeTimeoutMilliseconds: 6000), 7000)
        XCTAssertEqual(AdminServer.logoutWaitMilliseconds(storeTimeoutMilliseconds: 15000), 16000)
    }

    func testPastTheWaitTheLogoutIsA503SayingTheStoreDidNotAnswer() {
        let deadline = AdminServer.logoutDeadline(identity: "orders", milliseconds: 5000)
        XCTAssertEqual(deadline.milliseconds, 5000)
        XCTAssertEqual(deadline.response.status, 503)
        XCTAssertTrue(deadline.response.body.contains(#""type":"#) && deadline.response.body.contains("shared-store-unavailable"),
                      deadline.response.body)
        XCTAssertTrue(deadline.response.body.contains("identity orders is logged out on this replica, but the shared token store "
                                                      + "did not answer within 5 s: the other replicas may keep the login until its "
                                                      + "tokens expire; log out again"), deadline.response.body)
        XCTAssertTrue(AdminServer.logoutDeadline(identity: "orders", milliseconds: 7500).response.body.contains("within 7500 ms"))
    }
}
