// One identity's part in the fleet's single flight through Redis, as a state machine with no I/O
// and the clock passed in. SharedTokens.swift does what each step says and reports the answers.
//
// A fetch the lifecycle started goes:
//
//   read the entry ──► the lifecycle takes what is newer ──► good enough: done
//        │                                                   │ still needed
//        ▼                                                   ▼
//   (alone: Redis cannot     acquire: take the lease and read again, atomically
//    answer, the fetch goes      │ taken                       │ another replica's
//    on without it)              ▼                             ▼
//                          good enough: release, done     wait: the holder's message, or the
//                          still needed: hold — fetch,    lease's expiry (a timer at its PTTL),
//                          then write (compare-and-set)   then look again
//
// Looking again, and any fetch once this replica has seen the entry (`knownVersion`), reads and
// acquires in one step (`acquireIfUnchanged`): the lease is taken only if the entry is still the
// version last seen — it then holds nothing newer than what this replica has, so the fetch is
// needed — and otherwise the new entry comes back without the lease, for the lifecycle to take
// (then, if still needed, a plain acquire). A refresh costs the holder two round trips (acquire,
// write) and each other replica one or two (the acquire, and the look at the holder's message).
//
// Messages are counted (`heard`): one that arrives between sending the acquire and its answer
// — the holder wrote meanwhile — sends the waiter back to looking at once, so no wake-up is lost.
//
// Which refresh token to trust: a replica that obtained tokens alone (Redis was down) while the
// shared entry stayed as it last saw it holds the newer refresh token (a rotating IdP revoked the
// stored one), so it keeps its own until it has written; any entry written since by another
// replica is newer and is taken. The same holds for a write a failover may lose (Sentinel: every
// write until a read shows it survived) and for a write whose answer never came: if it was lost,
// the master holds the version it replaced, and that one's refresh token is no longer trusted.
//
// Writing them again (`reassert`): what this replica holds that Redis may lack is written as soon
// as the link is (back) up — when the link comes back, or when a fetch that went alone ends on a
// link that is up again — with compare-and-set against the version it replaced, so it lands only
// if nothing newer was written meanwhile; a write that did reach the new master is recognised by
// its own version.

struct SharedFetch: Equatable {
    enum Phase: Equatable {
        case idle
        /// The first connection to Redis is being made (bounded by its timeout).
        case awaitingLink
        case reading
        /// The acquire is under way; `heard` is the message count when it was sent.
        case acquiring(heard: UInt64)
        /// This replica holds the lease and its token request is under way.
        case holding
        /// Another replica holds the lease until `until` (monotonic seconds).
        case waiting(until: Double)
        /// The token request goes without Redis.
        case alone
    }

    /// What SharedTokens does next.
    enum Step: Equatable {
        case read
        case acquire
        /// Read the entry and take the lease in one step if it is still `version` (the one last seen).
        case acquireIfUnchanged(EntryVersion)
        /// Send the token request: the lease is this replica's.
        case fetch
        /// Redis cannot help: fetch without it.
        case alone
        /// The entry was good enough: the fetch ends without a request (giving the lease back).
        case done(releasing: Bool)
        /// Arm the lease timer for `until`.
        case wait(until: Double)
        /// Store what the fetch obtained (compare-and-set), releasing the lease.
        case write
        /// Give the lease back: the fetch failed.
        case release
        /// Write what this replica holds again, compare-and-set against `reassertExpected`.
        case reassert
        case nothing
    }

    /// What this replica holds that the entry in Redis may not.
    enum Unshared: Equatable {
        /// Redis holds what this replica holds, or newer.
        case none
        /// Tokens obtained without Redis since `knownVersion` was read.
        case fetchedAlone
        /// Written as `knownVersion` over `previous`, with no replica confirming the write: a
        /// failover may have lost it.
        case unreplicated(previous: EntryVersion)
        /// Tokens obtained without Redis after such a write: newer than `knownVersion` and than
        /// `previous`, whichever of the two the master holds now.
        case fetchedAloneAfterUnreplicated(previous: EntryVersion)
    }

    /// Where the link to Redis stands when a fetch begins.
    enum Link: Equatable {
        case ready
        /// The first connection is under way: wait for it (it is bounded by the timeout).
        case opening
        /// Down, or reconnecting after an outage: do not wait.
        case down
    }

    /// A waiter looks again this long after the lease's expiry, so the holder's own expiry has passed.
    static let leaseMargin = 0.005

    /// A fetch whose entry is seldom there yet and, when it is, seldom due (a caller's:
    /// SharedCallerTokens): its first look reads the entry and takes the lease in one step if
    /// there is none (`acquireIfUnchanged(.absent)`), one round trip where a read and an acquire
    /// were two; an entry that is there comes back without the lease, as after any change.
    static var expectingNoEntry: SharedFetch {
        var fetch = SharedFetch()
        fetch.knownVersion = .absent
        return fetch
    }

    private(set) var phase = Phase.idle
    /// Messages heard for this entry.
    private(set) var heard: UInt64 = 0
    /// The entry's version as last read or written here: the write's expected version.
    private(set) var knownVersion = EntryVersion.unknown
    private(set) var unshared = Unshared.none

    /// Tokens were obtained without Redis since `knownVersion`.
    var fetchedAlone: Bool { unshared == .fetchedAlone }

    /// The version a `reassert` write replaces: the one this replica's tokens are newer than.
    var reassertExpected: EntryVersion {
        if case .unreplicated(let previous) = unshared { return previous }
        return knownVersion
    }

    /// A reassert only over an entry this replica read or wrote. Over none (`.absent`, or
    /// `.unknown`: compared as "") it would also land on an entry a logout removed while this
    /// replica's link was down and the removal's message missed, and log the person back in on
    /// every replica; the next refresh's write (after its acquire) shares the tokens then.
    private var reassertIfSeen: Step {
        guard case .known = reassertExpected else { return .nothing }
        return .reassert
    }

    var holdsLease: Bool { phase == .holding }

    var isWaiting: Bool {
        if case .waiting = phase { return true }
        return false
    }

    /// The lifecycle started a fetch.
    mutating func begin(link: Link) -> Step {
        switch link {
        case .ready:
            return look()
        case .opening:
            phase = .awaitingLink
            return .nothing
        case .down:
            phase = .alone
            return .alone
        }
    }

    /// The link is up: its first connection, or again after an outage or a failover.
    mutating func linkReady() -> Step {
        switch phase {
        case .awaitingLink:
            return look()
        case .idle:
            return unshared == .none ? .nothing : reassertIfSeen
        default:
            // A fetch under way writes when it ends.
            return .nothing
        }
    }

    /// Reads the entry, or, once it was seen here, reads it and takes the lease in one step if it
    /// is still the version seen (see the top of the file).
    private mutating func look() -> Step {
        guard knownVersion != .unknown else {
            phase = .reading
            return .read
        }
        phase = .acquiring(heard: heard)
        return .acquireIfUnchanged(knownVersion)
    }

    /// The link failed (or its first connection did): every step still waiting on Redis goes
    /// alone. A holder's request goes on; its write will not happen.
    mutating func linkLost() -> Step {
        switch phase {
        case .awaitingLink, .reading, .acquiring, .waiting:
            phase = .alone
            return .alone
        case .idle, .holding, .alone:
            return .nothing
        }
    }

    /// A read or acquire of this entry failed (error reply, unreadable answer, not sent).
    mutating func operationFailed() -> Step {
        linkLost()
    }

    /// An entry was read (by a read or an acquire) with `version`: whether its refresh token may
    /// replace the one held (see the top of the file).
    mutating func entryRead(version: String?) -> Bool {
        let read = EntryVersion(version)
        switch unshared {
        case .none:
            knownVersion = read
            return true
        case .fetchedAlone:
            guard read == knownVersion else {
                unshared = .none
                knownVersion = read
                return true
            }
            return false
        case .unreplicated(let previous):
            guard read == previous else {
                // This replica's write (it survived), or one written since.
                unshared = .none
                knownVersion = read
                return true
            }
            // The version this replica's write replaced: the write was lost with the old master,
            // and what this replica holds is newer than the entry, as if obtained alone.
            unshared = .fetchedAlone
            knownVersion = read
            return false
        case .fetchedAloneAfterUnreplicated(let previous):
            guard read == previous || read == knownVersion else {
                unshared = .none
                knownVersion = read
                return true
            }
            // Either is older than what this replica obtained since.
            unshared = .fetchedAlone
            knownVersion = read
            return false
        }
    }

    /// The read's entry went to the lifecycle: `satisfied` when it needs no token request now.
    mutating func readDone(satisfied: Bool) -> Step {
        guard phase == .reading else { return .nothing }
        if satisfied {
            phase = .idle
            return .done(releasing: false)
        }
        phase = .acquiring(heard: heard)
        return .acquire
    }

    /// The acquire's answer went to the lifecycle (`satisfied` as above) at `now`.
    mutating func acquireDone(lease: LeaseOutcome, remainingMilliseconds: Int64, satisfied: Bool, now: Double) -> Step {
        guard case .acquiring(let heardBefore) = phase else { return lease == .taken ? .release : .nothing }
        switch (lease, satisfied) {
        case (.taken, true):
            phase = .idle
            return .done(releasing: true)
        case (.taken, false):
            phase = .holding
            return .fetch
        case (.heldByAnother, true), (.entryChanged, true):
            phase = .idle
            return .done(releasing: false)
        case (.entryChanged, false):
            // A newer entry that is not enough either (or none: a logout removed it).
            phase = .acquiring(heard: heard)
            return .acquire
        case (.heldByAnother, false):
            if heard != heardBefore {
                // The holder wrote while the acquire was on its way: the entry may be new.
                return look()
            }
            let until = now + Double(max(0, remainingMilliseconds)) / 1000 + Self.leaseMargin
            phase = .waiting(until: until)
            return .wait(until: until)
        }
    }

    /// The channel said this entry was written or its lease released.
    mutating func messageHeard() -> Step {
        heard &+= 1
        guard isWaiting else { return .nothing }
        return look()
    }

    /// The lease timer fired at `now`.
    mutating func leaseTimerFired(now: Double) -> Step {
        guard case .waiting(let until) = phase else { return .nothing }
        guard now >= until - Self.leaseMargin else { return .wait(until: until) }
        return look()
    }

    /// The token request ended. `obtained`: a token came; `refreshTokenDropped`: the IdP refused
    /// the refresh token, which the entry must no longer offer. `linkReady`: Redis can take a write.
    mutating func fetchEnded(obtained: Bool, refreshTokenDropped: Bool, linkReady: Bool) -> Step {
        let before = phase
        guard before == .holding || before == .alone else { return .nothing }
        phase = .idle
        if before == .holding && linkReady {
            return obtained || refreshTokenDropped ? .write : .release
        }
        guard obtained else { return .nothing }
        switch unshared {
        case .unreplicated(let previous), .fetchedAloneAfterUnreplicated(let previous):
            unshared = .fetchedAloneAfterUnreplicated(previous: previous)
        case .none, .fetchedAlone:
            unshared = .fetchedAlone
        }
        // Gone alone while the link came back: write it now, not at the next refresh.
        return linkReady ? reassertIfSeen : .nothing
    }

    /// A write (or a reassert) that replaced `expected` was stored as `version`; `replicated`:
    /// no failover can lose it (true without Sentinel). With Sentinel it stays `unreplicated`
    /// until a read shows what the master holds: `WAIT`'s count proves nothing (another replica
    /// than the one that has it may be promoted), while reading `expected` again can only mean
    /// the write was lost (versions are random, never reused).
    mutating func written(version: String, over expected: EntryVersion, replicated: Bool = true) {
        knownVersion = .known(version)
        unshared = replicated ? .none : .unreplicated(previous: expected)
    }

    /// A write of `version` over `expected` was sent and no answer came (a timeout, a reset, a
    /// failover): the server may have stored it. It counts as a write nobody confirmed, so that
    /// reading `version` later (it was stored) is trusted as this replica's own, and reading
    /// `expected` (it was not) is not — as `writeFailed` would have it, a later write again
    /// over `expected` would find `version`, take it as another replica's, and trust its older
    /// refresh token.
    mutating func writeUnanswered(version: String, over expected: EntryVersion) {
        written(version: version, over: expected, replicated: false)
    }

    /// The compare-and-set found `current` instead of the version it expected: another replica
    /// wrote since (its entry is newer, and the next read takes it), or this replica's own write
    /// was there after all (a reassert of a write that survived the failover) — or, for tokens
    /// obtained alone after a write nobody confirmed, the version that write replaced: the write
    /// was lost, and the tokens go again over that one.
    mutating func writeConflicted(current: String?) -> Step {
        if case .fetchedAloneAfterUnreplicated(let previous) = unshared, EntryVersion(current) == previous {
            unshared = .fetchedAlone
            knownVersion = previous
            return phase == .idle ? reassertIfSeen : .nothing
        }
        unshared = .none
        return .nothing
    }

    /// The write did not reach Redis: what was obtained is this replica's alone (or, for a write
    /// nobody confirmed, is still unconfirmed).
    mutating func writeFailed() {
        switch unshared {
        case .unreplicated, .fetchedAloneAfterUnreplicated: break
        case .none, .fetchedAlone: unshared = .fetchedAlone
        }
    }
}
