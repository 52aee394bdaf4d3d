// BurstRelease: when a worker gives the memory of a burst back to the system, decided with no I/O.
//
// A burst — thousands of requests in flight at once — makes a worker allocate a workspace per
// request and an upstream connection per exchange. When it is over, the pools keep what they are
// bounded to (`WorkspacePool.maxSpare`, `limits.maxIdleUpstreamConnections`) and free the rest,
// but glibc's malloc keeps freed memory in its heaps: measured 2026-11-27, 10,000 requests at once
// left the relay's RSS 44 MiB above its start with 13 MiB in use (4.5 KiB per idle connection
// where the connections themselves need 1.2). `malloc_trim(0)` hands the free pages back
// (RSS 13 MiB above the start, 1.34 KiB per connection); the worker calls it once the freeing has
// stopped, not while it goes on, and not more often than every `minimumInterval`.
//
//   quiet ─(freed: arm the timer)─▶ freeing ─(timer, nothing freed for `settle`)─▶ trim ─▶ quiet
//                                      ▲  └─(timer, freed lately, or trimmed lately)─▶ wait ─┘
//                                      └─────────────(freed)─────────────┘
//
// Only the pools' overflow reports frees — a workspace or an idle upstream connection beyond what
// its pool keeps. A burst is the usual cause, but a steady load with more exchanges at once than
// `maxIdleUpstreamConnections` overflows the upstream pool too: its frees keep putting the trim
// off while they go on without a second's pause, and a pause after `minimumFreed` of them trims
// (at most every `minimumInterval`; `malloc_trim` itself once per interval in the whole process,
// `ProcessTrimGate`).

struct BurstRelease {
    /// Frees stop for this long before the burst counts as over.
    static let settleMilliseconds: UInt64 = 1000
    /// Trims at most this often (a trim walks every heap's free lists under its lock).
    static let minimumIntervalMilliseconds: UInt64 = 10_000
    /// Fewer frees than this since the last trim are not worth one (a few large requests).
    static let minimumFreed = 64

    /// Objects the pools freed since the last trim.
    private(set) var freedSinceTrim = 0
    /// When the last of them was freed (loop milliseconds).
    private(set) var lastFreedAt: UInt64 = 0
    /// When the last trim ran; nil before the first.
    private var lastTrimAt: UInt64?
    /// The timer is armed: a later free need not arm it again.
    private(set) var timerArmed = false

    /// What the worker does when the timer fires.
    enum Step: Equatable {
        /// Give the free memory back now.
        case trim
        /// Fire again at this time (loop milliseconds).
        case wait(until: UInt64)
        /// Too little was freed: nothing to do until the pools free more.
        case none
    }

    /// A pool freed `count` objects at `now`. True: arm the timer for `settleMilliseconds`.
    mutating func freed(_ count: Int = 1, now: UInt64) -> Bool {
        freedSinceTrim += count
        lastFreedAt = now
        guard !timerArmed else { return false }
        timerArmed = true
        return true
    }

    /// The timer fired at `now`.
    mutating func timerFired(now: UInt64) -> Step {
        timerArmed = false
        guard freedSinceTrim >= Self.minimumFreed else {
            freedSinceTrim = 0
            return .none
        }
        var due = lastFreedAt + Self.settleMilliseconds
        if let lastTrimAt { due = max(due, lastTrimAt + Self.minimumIntervalMilliseconds) }
        if now < due {
            timerArmed = true
            return .wait(until: due)
        }
        freedSinceTrim = 0
        lastTrimAt = now
        return .trim
    }
}
