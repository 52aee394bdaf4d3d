import HTTPFields

/// An open-addressing hash table from lowercase host names to small integers, looked up with
/// raw Host-header bytes compared case-insensitively, without building a String.
struct HostIndex: Sendable {
    private struct Entry: Sendable {
        var start: Int
        var count: Int
        var hash: UInt64
        var value: Int
    }

    private var names: [UInt8] = []
    private var entries: [Entry] = []
    /// Entry index per slot, -1 when empty; the count is a power of two at least twice the
    /// number of entries, so probing always ends.
    private var slots: [Int] = []

    init(_ keys: [(name: String, value: Int)]) {
        var capacity = 4
        while capacity < keys.count * 2 { capacity *= 2 }
        // Built in locals, each name lowercased straight into `names`: a lowercased copy of
        // each, and the tables grown as they filled, were most of building a reload's route
        // table with 10,000 routes.
        var slots = [Int](repeating: -1, count: capacity)
        var entries: [Entry] = []
        entries.reserveCapacity(keys.count)
        var names: [UInt8] = []
        names.reserveCapacity(keys.reduce(0) { $0 + $1.name.utf8.count })
        for (name, value) in keys {
            let start = names.count
            for byte in name.utf8 { names.append(ASCII.lowercased(byte)) }
            let hash = names.withUnsafeBytes { Self.hash($0, start..<$0.count) }
            var slot = Int(truncatingIfNeeded: hash) & (capacity - 1)
            while slots[slot] != -1 { slot = (slot + 1) & (capacity - 1) }
            slots[slot] = entries.count
            entries.append(Entry(start: start, count: names.count - start, hash: hash, value: value))
        }
        self.names = names
        self.entries = entries
        self.slots = slots
    }

    var isEmpty: Bool { entries.isEmpty }

    /// The value stored for the host in `buffer[range]`, compared case-insensitively.
    func lookup(_ buffer: UnsafeRawBufferPointer, _ range: Range<Int>) -> Int? {
        guard !entries.isEmpty else { return nil }
        let hash = Self.hash(buffer, range)
        let mask = slots.count - 1
        var slot = Int(truncatingIfNeeded: hash) & mask
        while true {
            let entryIndex = slots[slot]
            if entryIndex == -1 { return nil }
            let entry = entries[entryIndex]
            if entry.hash == hash && entry.count == range.count && equalsLowercased(buffer, range, entry) {
                return entry.value
            }
            slot = (slot + 1) & mask
        }
    }

    private func equalsLowercased(_ buffer: UnsafeRawBufferPointer, _ range: Range<Int>, _ entry: Entry) -> Bool {
        names.withUnsafeBufferPointer { names in
            for offset in 0..<entry.count where ASCII.lowercased(buffer[range.lowerBound + offset]) != names[entry.start + offset] {
                return false
            }
            return true
        }
    }

    /// FNV-1a over the lowercased bytes.
    private static func hash(_ buffer: UnsafeRawBufferPointer, _ range: Range<Int>) -> UInt64 {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for index in range {
            hash = (hash ^ UInt64(ASCII.lowercased(buffer[index]))) &* 0x0000_0100_0000_01B3
        }
        return hash
    }

    /// The host part of a Host header value: surrounding spaces, a `:port` and one trailing
    /// dot removed, an IPv6 literal without its brackets.
    static func hostBounds(in host: UnsafeRawBufferPointer) -> Range<Int> {
        var start = 0
        var end = host.count
        while start < end && (host[start] == UInt8(ascii: " ") || host[start] == UInt8(ascii: "\t")) { start += 1 }
        while end > start && (host[end - 1] == UInt8(ascii: " ") || host[end - 1] == UInt8(ascii: "\t")) { end -= 1 }
        if start < end && host[start] == UInt8(ascii: "[") {
            var close = start + 1
            while close < end && host[close] != UInt8(ascii: "]") { close += 1 }
            return close < end ? (start + 1)..<close : start..<end
        }
        var colon = start
        while colon < end && host[colon] != UInt8(ascii: ":") { colon += 1 }
        end = colon
        if end - start > 1 && host[end - 1] == UInt8(ascii: ".") { end -= 1 }
        return start..<end
    }
}
