import OAuth2
import XCTest

/// What `--version` prints and `GET /version` answers, from the version and the build's commit.
final class RelayBuildTests: XCTestCase {
    private let commit = "7447ae28d54fa189a48e2da2256d6ae384d10489"

    func testTheVersionIsRelayVersionsNumber() {
        XCTAssertEqual(RelayBuild(commit: commit).version, RelayVersion.number)
        XCTAssertEqual(RelayVersion.userAgent, "oauth-relay/\(RelayVersion.number)")
    }

    func testVersionLineNamesTheVersionAndTheCommit() {
        XCTAssertEqual(RelayBuild(version: "1.2.3", commit: commit).versionLine,
                       "oauth-relay 1.2.3 (commit 7447ae28d54fa189a48e2da2256d6ae384d10489)")
        XCTAssertEqual(RelayBuild(version: "1.2.3", commit: RelayBuild.unknownCommit).versionLine, "oauth-relay 1.2.3 (commit unknown)")
    }

    func testJSONHasExactlyTheVersionAndTheCommit() {
        XCTAssertEqual(RelayBuild(version: "1.2.3", commit: commit).json,
                       #"{"version":"1.2.3","commit":"7447ae28d54fa189a48e2da2256d6ae384d10489"}"#)
    }

    func testJSONQuotesWhatItHolds() {
        XCTAssertEqual(RelayBuild(version: "1.2.3-\"rc\"", commit: "unknown").json, #"{"version":"1.2.3-\"rc\"","commit":"unknown"}"#)
    }
}
