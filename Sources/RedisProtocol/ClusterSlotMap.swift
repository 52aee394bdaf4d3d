/// Which master serves each hash slot, as `CLUSTER SLOTS` tells, amended by `MOVED` replies.
/// A slot no master serves (a cluster not fully set up) has no node: commands for it go to any.
public struct ClusterSlotMap: Sendable, Equatable {
    /// The masters named, in the order first seen.
    public private(set) var masters: [ClusterNode] = []
    /// Per slot, 1 + the index of its master in `masters`; 0 for none.
    private var owners = [UInt16](repeating: 0, count: ClusterSlot.count)
    /// Each master's index in `masters`.
    private var indices: [ClusterNode: Int] = [:]

    public init() {}

    /// From `CLUSTER SLOTS`' reply, asked of a node at `askedHost`: an array of
    /// `[first slot, last slot, [master host, port, id, …], replicas…]`. Nil for a reply of
    /// another shape (an error: cluster support disabled), one that names a host that is not a
    /// host name or address or more than `mastersAtMost` masters, or one that assigns no slot.
    public init?(slotsReply reply: RedisReply, askedHost: String) {
        guard let ranges = reply.elements else { return nil }
        for range in ranges {
            guard let parts = range.elements, parts.count >= 3, let first = parts[0].integer, let last = parts[1].integer,
                  let firstSlot = ClusterSlot(Int(first)), let lastSlot = ClusterSlot(Int(last)), firstSlot <= lastSlot,
                  let master = parts[2].elements, master.count >= 2, let host = master[0] == .null ? "" : master[0].text,
                  let port = master[1].integer, let port16 = UInt16(exactly: port), port16 > 0 else { return nil }
            // Empty, "?" or NULL (`cluster-preferred-endpoint-type unknown-endpoint`): the node asked.
            let named = host.isEmpty || host == "?" ? askedHost : host
            guard ClusterNode.isValidHost(named) else { return nil }
            let node = ClusterNode(host: named, port: port16)
            for number in firstSlot.number...lastSlot.number {
                guard assign(ClusterSlot(number)!, to: node) else { return nil }
            }
        }
        guard !masters.isEmpty else { return nil }
    }

    /// The master of `slot`; nil when none is known.
    public func node(for slot: ClusterSlot) -> ClusterNode? {
        let owner = Int(owners[slot.number])
        return owner == 0 ? nil : masters[owner - 1]
    }

    /// At most as many masters as slots: a reply (or MOVEDs over time) naming more is not a
    /// cluster's, and `owners` could not count them.
    public static let mastersAtMost = ClusterSlot.count

    /// `slot` is served by `node` now (a `MOVED`). False, and the map unchanged, when `node` is
    /// new and the map names `mastersAtMost` already.
    @discardableResult
    public mutating func assign(_ slot: ClusterSlot, to node: ClusterNode) -> Bool {
        let index: Int
        if let known = indices[node] {
            index = known
        } else {
            guard masters.count < Self.mastersAtMost else { return false }
            index = masters.count
            masters.append(node)
            indices[node] = index
        }
        owners[slot.number] = UInt16(index + 1)
        return true
    }

    /// How many slots `node` serves.
    public func slotCount(of node: ClusterNode) -> Int {
        guard let index = indices[node] else { return 0 }
        return owners.count { Int($0) == index + 1 }
    }
}
