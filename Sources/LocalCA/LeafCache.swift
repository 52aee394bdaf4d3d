/// The leaves minted so far, by host, with no I/O and no clock of its own: a leaf is used while
/// it has more than `renewalMargin` seconds left and has begun (a clock stepped back before its
/// notBefore gets a new one), and past `capacity` hosts the one used least recently is dropped. `Leaf` is what the proxy hands a connection (a `TLSConfiguration`).
struct LeafCache<Leaf: Sendable>: Sendable {
    private struct Entry: Sendable {
        var leaf: Leaf
        var notBefore: Int64
        var notAfter: Int64
        var lastUse: UInt64
    }

    let capacity: Int
    let renewalMargin: Int64
    private var entries: [String: Entry] = [:]
    /// Counts uses, so that the entry with the smallest `lastUse` is the least recently used.
    private var uses: UInt64 = 0

    init(capacity: Int, renewalMargin: Int64) {
        precondition(capacity > 0, "a leaf cache holds at least one host")
        self.capacity = capacity
        self.renewalMargin = renewalMargin
    }

    var count: Int { entries.count }

    /// The cached leaf for `host` when it is valid at `now` with more than `renewalMargin` left,
    /// marked used.
    mutating func leaf(for host: String, now: Int64) -> Leaf? {
        guard var entry = entries[host], entry.notBefore <= now, entry.notAfter - now > renewalMargin else { return nil }
        uses += 1
        entry.lastUse = uses
        entries[host] = entry
        return entry.leaf
    }

    /// Keeps `leaf` for `host` (replacing an older one), dropping the least recently used host
    /// when that makes one too many.
    mutating func insert(_ leaf: Leaf, for host: String, notBefore: Int64, notAfter: Int64) {
        uses += 1
        entries[host] = Entry(leaf: leaf, notBefore: notBefore, notAfter: notAfter, lastUse: uses)
        if entries.count > capacity, let oldest = entries.min(by: { $0.value.lastUse < $1.value.lastUse })?.key {
            entries[oldest] = nil
        }
    }

    /// Whether `host` has a leaf (used or not), for tests.
    func contains(_ host: String) -> Bool { entries[host] != nil }
}
