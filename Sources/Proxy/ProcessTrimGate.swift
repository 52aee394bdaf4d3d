import Synchronization

/// Lets one worker at a time call `malloc_trim(0)`, at most once every
/// `BurstRelease.minimumIntervalMilliseconds` in the whole process. `malloc_trim` walks every
/// thread's heap holding that heap's lock, so one call returns every worker's free memory; the
/// workers see the same burst end within about a second of each other, and without the gate each
/// of them would walk all the heaps again.
///
/// A worker whose frees came after the last trim waits for the interval to pass and asks again:
/// the memory it freed late is then returned by whichever worker claims the next trim (at most one
/// more), and the others find it done.
final class ProcessTrimGate: Sendable {
    /// The gate every worker of the process asks.
    static let process = ProcessTrimGate()

    /// When the last trim started (loop milliseconds: libuv's monotonic clock, the same for every
    /// loop up to the time a loop cached it); 0 before the first.
    private let lastTrimAt = Atomic<UInt64>(0)
    private let intervalMilliseconds: UInt64

    init(intervalMilliseconds: UInt64 = BurstRelease.minimumIntervalMilliseconds) {
        self.intervalMilliseconds = intervalMilliseconds
    }

    /// What a worker does with its request for a trim.
    enum Answer: Equatable {
        /// Call `malloc_trim` now: this worker claimed the interval.
        case trim
        /// A trim started after the worker's last free returned that memory already.
        case done
        /// Another worker trimmed before this one's last free, too recently: ask again then.
        case wait(until: UInt64)
    }

    /// A worker whose last pool free was at `lastFreedAt` wants a trim at `now`.
    func claim(now: UInt64, lastFreedAt: UInt64) -> Answer {
        var last = lastTrimAt.load(ordering: .relaxed)
        while true {
            if last != 0 {
                if last > lastFreedAt { return .done }
                if now < last + intervalMilliseconds { return .wait(until: last + intervalMilliseconds) }
            }
            let (exchanged, original) = lastTrimAt.compareExchange(
                expected: last, desired: now, ordering: .relaxed)
            if exchanged { return .trim }
            last = original
        }
    }
}
