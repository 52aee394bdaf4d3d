@testable import Tokens
import XCTest

/// The fleet's single flight for one identity (SharedFetch): the steps, the lease decisions with
/// the clock passed in, and which refresh token is trusted — no Redis, no socket.
final class SharedFetchTests: XCTestCase {
    /// A fetch whose read found entry v1 not good enough and whose acquire is under way.
    private func acquiringFetch() -> SharedFetch {
        var fetch = SharedFetch()
        XCTAssertEqual(fetch.begin(link: .ready), .read)
        _ = fetch.entryRead(version: "v1")
        XCTAssertEqual(fetch.readDone(satisfied: false), .acquire)
        return fetch
    }

    func testAGoodEntryEndsTheFetchAtTheFirstRead() {
        var fetch = SharedFetch()
        XCTAssertEqual(fetch.begin(link: .ready), .read)
        XCTAssertTrue(fetch.entryRead(version: "v1"))
        XCTAssertEqual(fetch.readDone(satisfied: true), .done(releasing: false))
        XCTAssertEqual(fetch.phase, .idle)
    }

    func testTheLeaseTakenMeansFetchingThenWriting() {
        var fetch = acquiringFetch()
        XCTAssertEqual(fetch.acquireDone(lease: .taken, remainingMilliseconds: 35_000, satisfied: false, now: 100), .fetch)
        XCTAssertTrue(fetch.holdsLease)
        XCTAssertEqual(fetch.fetchEnded(obtained: true, refreshTokenDropped: false, linkReady: true), .write)
        XCTAssertEqual(fetch.knownVersion, .known("v1"), "the write compares with the version read")
        fetch.written(version: "v2")
        XCTAssertEqual(fetch.knownVersion, .known("v2"))
        XCTAssertEqual(fetch.phase, .idle)
    }

    func testTheLeaseTakenButTheEntryNowGoodReleasesIt() {
        // Another replica wrote between this one's read and its acquire.
        var fetch = acquiringFetch()
        XCTAssertEqual(fetch.acquireDone(lease: .taken, remainingMilliseconds: 35_000, satisfied: true, now: 100), .done(releasing: true))
        XCTAssertFalse(fetch.holdsLease)
    }

    func testAFailedFetchReleasesTheLeaseAndARefusedRefreshTokenIsWrittenAway() {
        var failed = acquiringFetch()
        _ = failed.acquireDone(lease: .taken, remainingMilliseconds: 100, satisfied: false, now: 0)
        XCTAssertEqual(failed.fetchEnded(obtained: false, refreshTokenDropped: false, linkReady: true), .release)
        var refused = acquiringFetch()
        _ = refused.acquireDone(lease: .taken, remainingMilliseconds: 100, satisfied: false, now: 0)
        XCTAssertEqual(refused.fetchEnded(obtained: false, refreshTokenDropped: true, linkReady: true), .write,
                       "the entry must stop offering a refresh token the IdP refused")
    }

    func testAnotherHoldersLeaseIsWaitedForUntilItsExpiry() {
        var fetch = acquiringFetch()
        XCTAssertEqual(fetch.acquireDone(lease: .heldByAnother, remainingMilliseconds: 2500, satisfied: false, now: 100),
                       .wait(until: 102.5 + SharedFetch.leaseMargin))
        XCTAssertTrue(fetch.isWaiting)
        // A timer that fires early (a clock step) waits on.
        XCTAssertEqual(fetch.leaseTimerFired(now: 101), .wait(until: 102.5 + SharedFetch.leaseMargin))
        XCTAssertEqual(fetch.leaseTimerFired(now: 102.6), .acquireIfUnchanged(.known("v1")),
                       "the lease expired: look again, taking the lease if the entry is still v1")
        XCTAssertEqual(fetch.phase, .acquiring(heard: 0))
    }

    func testTheHoldersMessageEndsTheWaitAtOnce() {
        var fetch = acquiringFetch()
        _ = fetch.acquireDone(lease: .heldByAnother, remainingMilliseconds: 30_000, satisfied: false, now: 100)
        XCTAssertEqual(fetch.messageHeard(), .acquireIfUnchanged(.known("v1")))
        _ = fetch.entryRead(version: "v2")
        XCTAssertEqual(fetch.acquireDone(lease: .entryChanged, remainingMilliseconds: -2, satisfied: true, now: 101),
                       .done(releasing: false), "the holder's entry, in the acquire's one round trip")
        XCTAssertEqual(fetch.leaseTimerFired(now: 200), .nothing, "a late timer does nothing")
    }

    func testAMessageHeardWhileTheAcquireWasOnItsWayIsNotLost() {
        // The holder wrote after this replica's acquire left and before its answer came: the
        // answer still shows the lease, but the message already passed.
        var fetch = acquiringFetch()
        XCTAssertEqual(fetch.messageHeard(), .nothing)
        XCTAssertEqual(fetch.acquireDone(lease: .heldByAnother, remainingMilliseconds: 30_000, satisfied: false, now: 100),
                       .acquireIfUnchanged(.known("v1")))
    }

    func testOnceTheEntryWasSeenAFetchReadsAndTakesTheLeaseInOneStep() {
        var fetch = acquiringFetch()
        _ = fetch.acquireDone(lease: .taken, remainingMilliseconds: 35_000, satisfied: false, now: 100)
        _ = fetch.fetchEnded(obtained: true, refreshTokenDropped: false, linkReady: true)
        fetch.written(version: "v2")
        // The next refresh: the entry is still v2, what this replica wrote: the lease comes with the read.
        XCTAssertEqual(fetch.begin(link: .ready), .acquireIfUnchanged(.known("v2")))
        XCTAssertTrue(fetch.entryRead(version: "v2"))
        XCTAssertEqual(fetch.acquireDone(lease: .taken, remainingMilliseconds: 35_000, satisfied: false, now: 200), .fetch)
        XCTAssertTrue(fetch.holdsLease)
    }

    func testAnEntryChangedSinceItWasSeenComesBackWithoutTheLease() {
        var fetch = SharedFetch()
        _ = fetch.entryRead(version: "v1")
        XCTAssertEqual(fetch.begin(link: .ready), .acquireIfUnchanged(.known("v1")))
        _ = fetch.entryRead(version: "v2")
        XCTAssertEqual(fetch.acquireDone(lease: .entryChanged, remainingMilliseconds: -2, satisfied: true, now: 0), .done(releasing: false),
                       "another replica refreshed first: one round trip, no lease")
        XCTAssertEqual(fetch.begin(link: .ready), .acquireIfUnchanged(.known("v2")))
        _ = fetch.entryRead(version: nil)
        XCTAssertEqual(fetch.acquireDone(lease: .entryChanged, remainingMilliseconds: -2, satisfied: false, now: 0), .acquire,
                       "changed but not enough (removed by a logout): the lease whatever the entry")
        XCTAssertEqual(fetch.phase, .acquiring(heard: 0))
    }

    func testAFirstFetchReadsBeforeAskingForTheLease() {
        var fetch = SharedFetch()
        XCTAssertEqual(fetch.begin(link: .ready), .read, "nothing seen yet: another replica's entry may be all it needs")
    }

    func testMessagesForAnIdleFetchDoNothing() {
        var fetch = SharedFetch()
        XCTAssertEqual(fetch.messageHeard(), .nothing)
        XCTAssertEqual(fetch.phase, .idle)
    }

    func testAnAbsentLeaseTimeIsNoWaitAtAll() {
        var fetch = acquiringFetch()
        XCTAssertEqual(fetch.acquireDone(lease: .heldByAnother, remainingMilliseconds: -2, satisfied: false, now: 7),
                       .wait(until: 7 + SharedFetch.leaseMargin))
    }

    func testTheFirstConnectionIsWaitedForAndLaterOutagesAreNot() {
        var first = SharedFetch()
        XCTAssertEqual(first.begin(link: .opening), .nothing)
        XCTAssertEqual(first.linkReady(), .read)
        var failed = SharedFetch()
        XCTAssertEqual(failed.begin(link: .opening), .nothing)
        XCTAssertEqual(failed.linkLost(), .alone)
        var down = SharedFetch()
        XCTAssertEqual(down.begin(link: .down), .alone)
        XCTAssertEqual(down.linkReady(), .nothing, "a fetch gone alone stays alone")
    }

    func testLosingRedisSendsEveryWaitingStepAloneButNotTheHolder() {
        var acquiring = acquiringFetch()
        XCTAssertEqual(acquiring.linkLost(), .alone)
        var waiting = acquiringFetch()
        XCTAssertEqual(waiting.acquireDone(lease: .heldByAnother, remainingMilliseconds: 1000, satisfied: false, now: 0), .wait(until: 1.005))
        XCTAssertEqual(waiting.linkLost(), .alone)
        var reading = SharedFetch()
        XCTAssertEqual(reading.begin(link: .ready), .read)
        XCTAssertEqual(reading.linkLost(), .alone)
        var holder = acquiringFetch()
        _ = holder.acquireDone(lease: .taken, remainingMilliseconds: 1000, satisfied: false, now: 0)
        XCTAssertEqual(holder.linkLost(), .nothing)
        XCTAssertTrue(holder.holdsLease, "its token request goes on")
        XCTAssertEqual(holder.fetchEnded(obtained: true, refreshTokenDropped: false, linkReady: false), .nothing)
        XCTAssertTrue(holder.fetchedAlone, "what it obtained never reached Redis")
    }

    func testAnErrorReplySendsTheFetchAlone() {
        var fetch = SharedFetch()
        _ = fetch.begin(link: .ready)
        XCTAssertEqual(fetch.operationFailed(), .alone)
        XCTAssertEqual(fetch.fetchEnded(obtained: true, refreshTokenDropped: false, linkReady: true), .nothing)
        XCTAssertTrue(fetch.fetchedAlone)
    }

    // MARK: - Which refresh token is trusted (compare-and-set's other half)

    func testAnEntryIsTrustedUnlessThisReplicaGotNewerTokensAloneSinceReadingIt() {
        var fetch = SharedFetch()
        XCTAssertTrue(fetch.entryRead(version: "v1"))
        // Redis went away; this replica refreshed alone (a rotating IdP revoked v1's refresh token).
        XCTAssertEqual(fetch.begin(link: .down), .alone)
        _ = fetch.fetchEnded(obtained: true, refreshTokenDropped: false, linkReady: false)
        // Back: the entry is still v1, older than what this replica holds.
        XCTAssertFalse(fetch.entryRead(version: "v1"))
        XCTAssertFalse(fetch.entryRead(version: "v1"), "until this replica has written")
        fetch.written(version: "v2")
        XCTAssertTrue(fetch.entryRead(version: "v2"))
    }

    func testAnEntryAnotherReplicaWroteMeanwhileIsTrusted() {
        var fetch = SharedFetch()
        _ = fetch.entryRead(version: "v1")
        _ = fetch.begin(link: .down)
        _ = fetch.fetchEnded(obtained: true, refreshTokenDropped: false, linkReady: false)
        XCTAssertTrue(fetch.entryRead(version: "v7"), "written since: the fleet moved on")
        XCTAssertFalse(fetch.fetchedAlone)
        XCTAssertTrue(fetch.entryRead(version: nil) && fetch.knownVersion == .absent, "an entry gone (Redis restarted empty) holds nothing to distrust")
    }

    func testAWriteThatFailedKeepsTheReplicaAhead() {
        var fetch = SharedFetch()
        _ = fetch.entryRead(version: "v1")
        fetch.writeFailed()
        XCTAssertFalse(fetch.entryRead(version: "v1"))
    }

    func testTheExpectedVersionOfAnAbsentEntryIsEmpty() {
        XCTAssertEqual(EntryVersion.absent.scriptArgument, "")
        XCTAssertEqual(EntryVersion.unknown.scriptArgument, "")
        XCTAssertEqual(EntryVersion.known("ab12").scriptArgument, "ab12")
    }
}
