import Synchronization

/// A Prometheus histogram that one worker thread records into and the scrape reads, with no lock
/// and no read-modify-write instruction on the recording side (`SingleWriterCounts`).
///
/// It keeps one count per bucket, not cumulative: the value lands in the first bucket whose bound
/// it does not exceed, or in the last slot (`+Inf`) when it exceeds them all. A record is then one
/// short search and one increment instead of one increment per bucket at or above the value; the
/// scrape adds the counts up.
///
/// There is no separate total: `_count` is the sum of the bucket counts the scrape read, so the
/// exposition's `le="+Inf"` bucket always equals `_count` and the cumulative buckets never go down,
/// whatever the writer does meanwhile.
///
/// What a scrape sees while the writer records:
/// - each bucket count is one the writer stored, never older than one an earlier scrape saw. The
///   buckets are read one after another, so a scrape may count a value recorded just after one it
///   misses (that one landed in a bucket the scrape had already read).
/// - `_sum` includes every value counted in the buckets the scrape read (the writer stores the sum
///   before the bucket, releasing; the scrape reads the buckets, acquiring, before the sum). It may
///   also include values recorded after those reads, not yet counted: during traffic `_sum` can be
///   a few values ahead of `_count`, never behind it. The text format asks exactly two things of a
///   histogram's numbers, that the buckets are cumulative and that `le="+Inf"` equals `_count`;
///   both hold in every scrape. It asks nothing of `_sum` against `_count` (Prometheus stores them
///   as separate series), and a ratio of their rates over a range evens the lead out.
final class WorkerHistogram: Sendable {
    /// The upper bounds, ascending, finite.
    let bounds: [Double]
    /// One count per bound, then the values above every bound.
    private let buckets: SingleWriterCounts
    /// The sum of the recorded values, as a `Double`'s bit pattern.
    private let sumBits = Atomic<UInt64>(0)

    /// What one scrape read.
    struct Snapshot {
        /// Per bound, the values at most that bound; the last element is every value (`+Inf`).
        let cumulativeCounts: [UInt64]
        let sum: Double
        var count: UInt64 { cumulativeCounts[cumulativeCounts.count - 1] }
    }

    init(bounds: [Double]) {
        precondition(!bounds.isEmpty && bounds.allSatisfy(\.isFinite) && zip(bounds, bounds.dropFirst()).allSatisfy { $0 < $1 },
                     "histogram bounds must be finite and ascending")
        self.bounds = bounds
        buckets = SingleWriterCounts(count: bounds.count + 1)
    }

    /// Records `value`. Only from the one writing thread.
    @inline(__always)
    func record(_ value: Double) {
        // Few bounds, and the relay's durations sit in the lowest ones: a linear search stops
        // after a compare or two. `!(value <= bound)` rather than `value > bound`, so that NaN
        // (false against every bound) lands in +Inf, where swift-prometheus counts it too.
        var index = 0
        while index < bounds.count && !(value <= bounds[index]) { index += 1 }
        // The sum first: the bucket's release store publishes it with the count.
        let sum = Double(bitPattern: sumBits.load(ordering: .relaxed)) + value
        sumBits.store(sum.bitPattern, ordering: .relaxed)
        buckets.increment(index)
    }

    /// The counts and the sum as they are now. Any thread.
    func snapshot() -> Snapshot {
        var cumulative: [UInt64] = []
        cumulative.reserveCapacity(buckets.count)
        var total: UInt64 = 0
        for index in 0..<buckets.count {
            total &+= buckets.value(index)
            cumulative.append(total)
        }
        // After the buckets' acquiring loads: at least the sum of every value counted above.
        return Snapshot(cumulativeCounts: cumulative, sum: Double(bitPattern: sumBits.load(ordering: .relaxed)))
    }
}
