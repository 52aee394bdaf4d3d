import TokenStore
@testable import Tokens
import XCTest

/// A logout announced on the entries' channel: every replica but the one that sent it forgets the
/// identity it names, whatever its grant; writes and released leases are no logout.
final class SharedRemovalNoticeTests: XCTestCase {
    private let holder = "00000000000000aa"
    private let otherReplica = "00000000000000bb"
    /// A client-credentials identity and an interactive one, as this replica knows their entries.
    private let service = SharedEntryKeys(prefix: "fleet:", identity: "svc", fingerprint: SettingsFingerprint(bytes: [UInt8](repeating: 1, count: 32)))
    private let person = SharedEntryKeys(prefix: "fleet:", identity: "me", fingerprint: SettingsFingerprint(bytes: [UInt8](repeating: 2, count: 32)))

    private func forgotten(_ message: [UInt8]) -> String? {
        SharedRemovalNotice.identityToForget(message: message, holder: holder) { entry in
            [service.entry: "svc", person.entry: "me"][entry]
        }
    }

    func testAClientCredentialsIdentityLoggedOutElsewhereIsForgottenHere() {
        XCTAssertEqual(forgotten(service.removal(by: otherReplica)), "svc")
    }

    func testAPersonsLoginLoggedOutElsewhereIsForgottenHere() {
        XCTAssertEqual(forgotten(person.removal(by: otherReplica)), "me")
    }

    func testThisReplicasOwnLogoutIsNotForgottenTwice() {
        XCTAssertNil(forgotten(service.removal(by: holder)))
    }

    func testAWriteOrAReleasedLeaseIsNoLogout() {
        XCTAssertNil(forgotten(service.entry))
        XCTAssertNil(forgotten(person.entry))
    }

    func testAnEntryOfNoIdentityHereIsIgnored() {
        let elsewhere = SharedEntryKeys(prefix: "fleet:", identity: "svc", fingerprint: SettingsFingerprint(bytes: [UInt8](repeating: 3, count: 32)))
        XCTAssertNil(forgotten(elsewhere.removal(by: otherReplica)), "another setting's entry (a rolling update's other version)")
    }
}
