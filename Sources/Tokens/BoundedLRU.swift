/// A map of at most `capacity` entries that forgets the least recently used one to make room:
/// the bound on what the relay keeps per caller (validated tokens; tokens exchanged for a caller).
/// Not thread-safe: a shared one sits behind a lock, and every operation is O(1) without
/// allocating once the storage has grown to `capacity`. Inlinable, so that other modules get it
/// specialized for their key and value (it is on the request path).
///
/// Entries live in one array and are chained most recently used first by index, so a lookup moves
/// an entry to the front without touching the allocator; a removed entry's slot is reused.
public struct BoundedLRU<Key: Hashable, Value> {
    @usableFromInline
    struct Node {
        @usableFromInline var key: Key
        @usableFromInline var value: Value
        @usableFromInline var newer: Int
        @usableFromInline var older: Int

        @inlinable
        init(key: Key, value: Value, newer: Int, older: Int) {
            self.key = key
            self.value = value
            self.newer = newer
            self.older = older
        }
    }

    public let capacity: Int
    @usableFromInline var slots: [Key: Int] = [:]
    @usableFromInline var nodes: [Node?] = []
    @usableFromInline var free: [Int] = []
    @usableFromInline var newest = -1
    @usableFromInline var oldest = -1

    @inlinable
    public init(capacity: Int) {
        precondition(capacity > 0, "a bounded LRU holds at least one entry")
        self.capacity = capacity
    }

    @inlinable
    public var count: Int { slots.count }

    /// The value under `key`, which becomes the most recently used.
    @inlinable
    public mutating func value(for key: Key) -> Value? {
        guard let slot = slots[key] else { return nil }
        moveToFront(slot)
        return nodes[slot]!.value
    }

    /// The value under `key`, without changing the order.
    @inlinable
    public func peek(_ key: Key) -> Value? {
        slots[key].map { nodes[$0]!.value }
    }

    /// Sets `key` to `value` as the most recently used entry; returns the entry forgotten to make
    /// room, if any.
    @inlinable @discardableResult
    public mutating func set(_ value: Value, for key: Key) -> (key: Key, value: Value)? {
        if let slot = slots[key] {
            nodes[slot]!.value = value
            moveToFront(slot)
            return nil
        }
        var evicted: (Key, Value)?
        if slots.count >= capacity, oldest >= 0 {
            let node = nodes[oldest]!
            evicted = (node.key, node.value)
            remove(node.key)
        }
        let slot: Int
        if let reused = free.popLast() {
            slot = reused
        } else {
            slot = nodes.count
            nodes.append(nil)
        }
        nodes[slot] = Node(key: key, value: value, newer: -1, older: newest)
        if newest >= 0 { nodes[newest]!.newer = slot }
        newest = slot
        if oldest < 0 { oldest = slot }
        slots[key] = slot
        return evicted
    }

    /// Forgets the least recently used entry, if any; returns it.
    @inlinable @discardableResult
    public mutating func removeOldest() -> (key: Key, value: Value)? {
        guard oldest >= 0 else { return nil }
        let node = nodes[oldest]!
        remove(node.key)
        return (node.key, node.value)
    }

    /// Forgets `key`; returns its value.
    @inlinable @discardableResult
    public mutating func remove(_ key: Key) -> Value? {
        guard let slot = slots.removeValue(forKey: key) else { return nil }
        unlink(slot)
        let value = nodes[slot]!.value
        nodes[slot] = nil
        free.append(slot)
        return value
    }

    /// The keys from the most to the least recently used (for tests and reports).
    public var keysByRecency: [Key] {
        var keys: [Key] = []
        var slot = newest
        while slot >= 0 {
            keys.append(nodes[slot]!.key)
            slot = nodes[slot]!.older
        }
        return keys
    }

    @inlinable
    mutating func moveToFront(_ slot: Int) {
        guard slot != newest else { return }
        unlink(slot)
        nodes[slot]!.older = newest
        nodes[slot]!.newer = -1
        if newest >= 0 { nodes[newest]!.newer = slot }
        newest = slot
        if oldest < 0 { oldest = slot }
    }

    @inlinable
    mutating func unlink(_ slot: Int) {
        let node = nodes[slot]!
        if node.newer >= 0 { nodes[node.newer]!.older = node.older } else { newest = node.older }
        if node.older >= 0 { nodes[node.older]!.newer = node.newer } else { oldest = node.newer }
    }
}

extension BoundedLRU: Sendable where Key: Sendable, Value: Sendable {}
extension BoundedLRU.Node: Sendable where Key: Sendable, Value: Sendable {}
