import OAuth2
@testable import Tokens
import XCTest

/// One warning line per oddity of an identity's token answers, not one per refresh.
final class LifetimeWarningMemoryTests: XCTestCase {
    private let ignored = [LifetimeWarning.ignored(field: "expires_in", reason: .notPositive)]
    private let capped = [LifetimeWarning.capped(field: "expires_in")]

    func testTheSameOddityIsWarnedAboutOnce() {
        var memory = LifetimeWarningMemory()
        XCTAssertEqual(memory.toLog(ignored, slot: 1), ignored)
        XCTAssertEqual(memory.toLog(ignored, slot: 1), [])
        XCTAssertEqual(memory.toLog(ignored, slot: 1), [])
    }

    func testAnotherOddityIsWarnedAbout() {
        var memory = LifetimeWarningMemory()
        _ = memory.toLog(ignored, slot: 1)
        XCTAssertEqual(memory.toLog(capped, slot: 1), capped)
    }

    func testTheOddityIsWarnedAboutAgainAfterASoundAnswer() {
        var memory = LifetimeWarningMemory()
        _ = memory.toLog(ignored, slot: 1)
        XCTAssertEqual(memory.toLog([], slot: 1), [])
        XCTAssertEqual(memory.toLog(ignored, slot: 1), ignored)
    }

    func testIdentitiesAreRememberedApart() {
        var memory = LifetimeWarningMemory()
        _ = memory.toLog(ignored, slot: 1)
        XCTAssertEqual(memory.toLog(ignored, slot: 2), ignored)
    }

    func testAForgottenIdentityIsWarnedAboutAgain() {
        var memory = LifetimeWarningMemory()
        _ = memory.toLog(ignored, slot: 1)
        memory.forget(slot: 1)
        XCTAssertEqual(memory.toLog(ignored, slot: 1), ignored)
    }
}
