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

    /// A caller's entry: one step reads it and takes the lease when there is none; one that is
    /// there comes back without the lease, and the lease is asked for only if it is not good enough.
    func testAFetchExpectingNoEntryReadsAndLeasesInOneStep() {
        var fetch = SharedFetch.expectingNoEntry
        XCTAssertEqual(fetch.begin(link: .ready), .acquireIfUnchanged(.absent))
        XCTAssertTrue(fetch.entryRead(version: nil))
        XCTAssertEqual(fetch.acquireDone(lease: .taken, remainingMilliseconds: 10_000, satisfied: false, now: 100), .fetch)
        XCTAssertEqual(fetch.fetchEnded(obtained: true, refreshTokenDropped: false, linkReady: true), .write)
        XCTAssertEqual(fetch.knownVersion, .absent, "written only over no entry")

        var found = SharedFetch.expectingNoEntry
        XCTAssertEqual(found.begin(link: .ready), .acquireIfUnchanged(.absent))
        XCTAssertTrue(found.entryRead(version: "v1"))
        XCTAssertEqual(found.acquireDone(lease: .entryChanged, remainingMilliseconds: -2, satisfied: true, now: 100), .done(releasing: false))

        var due = SharedFetch.expectingNoEntry
        _ = due.begin(link: .ready)
        XCTAssertTrue(due.entryRead(version: "v1"))
        XCTAssertEqual(due.acquireDone(lease: .entryChanged, remainingMilliseconds: -2, satisfied: false, now: 100), .acquire)
        XCTAssertEqual(due.acquireDone(lease: .taken, remainingMilliseconds: 10_000, satisfied: false, now: 100), .fetch)
        XCTAssertEqual(due.fetchEnded(obtained: true, refreshTokenDropped: false, linkReady: true), .write)
        XCTAssertEqual(due.knownVersion, .known("v1"))

        var alone = SharedFetch.expectingNoEntry
        XCTAssertEqual(alone.begin(link: .down), .alone)
        XCTAssertEqual(alone.fetchEnded(obtained: true, refreshTokenDropped: false, linkReady: true), .nothing,
                       "nothing written over an entry never seen")
    }

    func testTheLeaseTakenMeansFetchingThenWriting() {
        var fetch = acquiringFetch()
        XCTAssertEqual(fetch.acquireDone(lease: .taken, remainingMilliseconds: 35_000, satisfied: false, now: 100), .fetch)
        XCTAssertTrue(fetch.holdsLease)
        XCTAssertEqual(fetch.fetchEnded(obtained: true, refreshTokenDropped: false, linkReady: true), .write)
        XCTAssertEqual(fetch.knownVersion, .known("v1"), "the write compares with the version read")
        fetch.written(version: "v2", over: .known("v1"))
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
        fetch.written(version: "v2", over: .known("v1"))
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
        _ = fetch.entryRead(version: "v1")
        _ = fetch.begin(link: .ready)
        XCTAssertEqual(fetch.operationFailed(), .alone)
        XCTAssertEqual(fetch.fetchEnded(obtained: true, refreshTokenDropped: false, linkReady: true), .reassert,
                       "the link is up: what it obtained is written now")
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
        fetch.written(version: "v2", over: .known("v1"))
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

    // MARK: - Writing again what Redis may lack (a failover, an outage)

    func testTokensObtainedAloneAreWrittenWhenTheLinkComesBack() {
        var fetch = SharedFetch()
        _ = fetch.entryRead(version: "v1")
        XCTAssertEqual(fetch.begin(link: .down), .alone)
        XCTAssertEqual(fetch.fetchEnded(obtained: true, refreshTokenDropped: false, linkReady: false), .nothing)
        XCTAssertEqual(fetch.linkReady(), .reassert)
        XCTAssertEqual(fetch.reassertExpected, .known("v1"), "written only over the entry it is newer than")
        fetch.written(version: "v2", over: .known("v1"))
        XCTAssertEqual(fetch.unshared, .none)
        XCTAssertEqual(fetch.linkReady(), .nothing, "nothing left to write")
    }

    func testAFetchUnderWayWritesWhenItEndsNotWhenTheLinkComesBack() {
        var fetch = acquiringFetch()
        _ = fetch.acquireDone(lease: .taken, remainingMilliseconds: 1000, satisfied: false, now: 0)
        fetch.writeFailed()
        XCTAssertEqual(fetch.linkReady(), .nothing)
    }

    func testAWriteAFailoverMayLoseStaysUnreplicatedUntilAReadShowsIt() {
        var fetch = SharedFetch()
        _ = fetch.entryRead(version: "v1")
        fetch.written(version: "v2", over: .known("v1"), replicated: false)
        XCTAssertEqual(fetch.unshared, .unreplicated(previous: .known("v1")))
        // WAIT's count no longer clears it: the replica promoted may not be the one that had v2.
        XCTAssertEqual(fetch.linkReady(), .reassert, "after a failover: written again over v1")
        XCTAssertFalse(fetch.entryRead(version: "v1"), "v1 again after v2 replaced it: v2 was lost")
        XCTAssertEqual(fetch.unshared, .fetchedAlone)
    }

    // MARK: - A write whose answer never came (a timeout, a reset, a failover)

    func testAWriteStoredButUnansweredKeepsTheNewestRefreshToken() {
        // v1 written over v0; the server stored it, the answer was lost.
        var fetch = SharedFetch()
        _ = fetch.entryRead(version: "v0")
        fetch.writeUnanswered(version: "v1", over: .known("v0"))
        // The link is down: the next refresh goes alone (R1 -> R2, R1 revoked by the rotation).
        XCTAssertEqual(fetch.begin(link: .down), .alone)
        XCTAssertEqual(fetch.fetchEnded(obtained: true, refreshTokenDropped: false, linkReady: false), .nothing)
        // Back: the reassert goes over v1 (it may be there), and lands.
        XCTAssertEqual(fetch.linkReady(), .reassert)
        XCTAssertEqual(fetch.reassertExpected, .known("v1"))
        XCTAssertFalse(fetch.entryRead(version: "v1"), "v1 holds R1, older than R2: not trusted")
        XCTAssertEqual(fetch.reassertExpected, .known("v1"))
    }

    func testAWriteUnansweredThatWasNotStoredGoesAgainOverTheOldEntry() {
        var fetch = SharedFetch()
        _ = fetch.entryRead(version: "v0")
        fetch.writeUnanswered(version: "v1", over: .known("v0"))
        _ = fetch.begin(link: .down)
        _ = fetch.fetchEnded(obtained: true, refreshTokenDropped: false, linkReady: false)
        XCTAssertEqual(fetch.linkReady(), .reassert)
        XCTAssertEqual(fetch.writeConflicted(current: "v0"), .reassert, "v1 never landed: again, over v0")
        XCTAssertEqual(fetch.reassertExpected, .known("v0"))
        XCTAssertFalse(fetch.entryRead(version: "v0"))
    }

    func testAWriteUnansweredWrittenAgainFindsItself() {
        var fetch = SharedFetch()
        _ = fetch.entryRead(version: "v0")
        fetch.writeUnanswered(version: "v1", over: .known("v0"))
        XCTAssertEqual(fetch.linkReady(), .reassert)
        XCTAssertEqual(fetch.reassertExpected, .known("v0"))
        XCTAssertEqual(fetch.writeConflicted(current: "v1"), .nothing, "its own write: nothing left to write")
        XCTAssertEqual(fetch.knownVersion, .known("v1"))
        XCTAssertEqual(fetch.unshared, .none)
        XCTAssertTrue(fetch.entryRead(version: "v1"))
    }

    // MARK: - No reassert over an entry never seen (a logout this replica missed)

    func testTokensObtainedAloneOverNoEntryAreNotWrittenAgainWhenTheLinkComesBack() {
        var unseen = SharedFetch()
        XCTAssertEqual(unseen.begin(link: .down), .alone)
        XCTAssertEqual(unseen.fetchEnded(obtained: true, refreshTokenDropped: false, linkReady: true), .nothing,
                       "never read: a reassert would compare with \"\" and land on a removed login")
        XCTAssertEqual(unseen.linkReady(), .nothing)
        var absent = SharedFetch()
        _ = absent.entryRead(version: nil)
        _ = absent.begin(link: .down)
        XCTAssertEqual(absent.fetchEnded(obtained: true, refreshTokenDropped: false, linkReady: false), .nothing)
        XCTAssertEqual(absent.linkReady(), .nothing)
        XCTAssertTrue(absent.fetchedAlone, "the next refresh's write shares it")
        XCTAssertEqual(absent.begin(link: .ready), .acquireIfUnchanged(.absent))
    }

    func testAFirstWriteAFailoverMayLoseIsNotWrittenAgainOverNoEntry() {
        var fetch = SharedFetch()
        _ = fetch.entryRead(version: nil)
        fetch.written(version: "v1", over: .absent, replicated: false)
        XCTAssertEqual(fetch.linkReady(), .nothing)
        _ = fetch.begin(link: .down)
        _ = fetch.fetchEnded(obtained: true, refreshTokenDropped: false, linkReady: false)
        XCTAssertEqual(fetch.linkReady(), .reassert, "over v1, which it wrote")
        XCTAssertEqual(fetch.writeConflicted(current: nil), .nothing, "gone (a logout): not written again over nothing")
    }

    func testAWriteAFailoverLostIsWrittenAgainAndTheOlderEntryNotTrusted() {
        var fetch = SharedFetch()
        _ = fetch.entryRead(version: "v1")
        fetch.written(version: "v2", over: .known("v1"), replicated: false)
        // The master died before its replica had v2; the link is up on the promoted replica.
        XCTAssertEqual(fetch.linkReady(), .reassert)
        XCTAssertEqual(fetch.reassertExpected, .known("v1"), "v2 replaced v1: written again over v1")
        // A read that comes first finds v1: its refresh token is older than this replica's.
        XCTAssertFalse(fetch.entryRead(version: "v1"))
        XCTAssertEqual(fetch.unshared, .fetchedAlone)
        XCTAssertEqual(fetch.knownVersion, .known("v1"), "the next write compares with what the new master holds")
    }

    func testAnUnreplicatedWriteThatSurvivedIsTrustedAgain() {
        var fetch = SharedFetch()
        _ = fetch.entryRead(version: "v1")
        fetch.written(version: "v2", over: .known("v1"), replicated: false)
        XCTAssertTrue(fetch.entryRead(version: "v2"))
        XCTAssertEqual(fetch.unshared, .none)
        var another = SharedFetch()
        _ = another.entryRead(version: "v1")
        another.written(version: "v2", over: .known("v1"), replicated: false)
        XCTAssertTrue(another.entryRead(version: "v9"), "written since by another replica: newer")
    }

    func testAReassertThatFindsAnotherVersionLeavesTheEntryToIt() {
        var fetch = SharedFetch()
        _ = fetch.entryRead(version: "v1")
        fetch.writeFailed()
        XCTAssertEqual(fetch.linkReady(), .reassert)
        XCTAssertEqual(fetch.writeConflicted(current: "v3"), .nothing)
        XCTAssertEqual(fetch.unshared, .none)
        XCTAssertTrue(fetch.entryRead(version: "v3"))
    }

    func testAFailedWriteOfAnUnreplicatedEntryStaysUnreplicated() {
        var fetch = SharedFetch()
        _ = fetch.entryRead(version: "v1")
        fetch.written(version: "v2", over: .known("v1"), replicated: false)
        fetch.writeFailed()
        XCTAssertEqual(fetch.unshared, .unreplicated(previous: .known("v1")))
    }

    /// v2 written with no replica confirming it, then tokens obtained alone during the failover.
    private func aloneAfterAnUnreplicatedWrite() -> SharedFetch {
        var fetch = SharedFetch()
        _ = fetch.entryRead(version: "v1")
        fetch.written(version: "v2", over: .known("v1"), replicated: false)
        XCTAssertEqual(fetch.begin(link: .down), .alone)
        XCTAssertEqual(fetch.fetchEnded(obtained: true, refreshTokenDropped: false, linkReady: false), .nothing)
        XCTAssertEqual(fetch.unshared, .fetchedAloneAfterUnreplicated(previous: .known("v1")))
        return fetch
    }

    func testTokensObtainedAloneAfterAnUnreplicatedWriteGoOverItIfItSurvived() {
        var fetch = aloneAfterAnUnreplicatedWrite()
        XCTAssertEqual(fetch.linkReady(), .reassert)
        XCTAssertEqual(fetch.reassertExpected, .known("v2"))
        fetch.written(version: "v3", over: .known("v2"))
        XCTAssertEqual(fetch.unshared, .none)
    }

    func testTokensObtainedAloneAfterAnUnreplicatedWriteGoOverTheVersionItReplacedIfItWasLost() {
        var fetch = aloneAfterAnUnreplicatedWrite()
        XCTAssertEqual(fetch.linkReady(), .reassert)
        XCTAssertEqual(fetch.writeConflicted(current: "v1"), .reassert, "v2 was lost: again, over v1")
        XCTAssertEqual(fetch.reassertExpected, .known("v1"))
        XCTAssertEqual(fetch.writeConflicted(current: "v9"), .nothing, "another replica wrote since: its entry stays")
        XCTAssertEqual(fetch.unshared, .none)
    }

    func testNeitherVersionIsTrustedOverTokensObtainedAloneAfterAnUnreplicatedWrite() {
        var lost = aloneAfterAnUnreplicatedWrite()
        XCTAssertFalse(lost.entryRead(version: "v1"))
        XCTAssertEqual(lost.reassertExpected, .known("v1"))
        var survived = aloneAfterAnUnreplicatedWrite()
        XCTAssertFalse(survived.entryRead(version: "v2"))
        XCTAssertEqual(survived.reassertExpected, .known("v2"))
        var newer = aloneAfterAnUnreplicatedWrite()
        XCTAssertTrue(newer.entryRead(version: "v7"))
    }
}
