/// Spare storage for `ByteBuffer`s that hold bytes only now and then — a stream's write backlog,
/// gathered for one system call and gone after it — so that an idle connection holds no buffer:
/// it borrows storage when it has bytes to keep and gives it back once they are gone (nginx frees
/// a keep-alive connection's buffers; h2o keeps pools per loop). One pool per event loop; it is
/// not thread-safe.
public final class BufferPool {
    /// Storage kept for reuse, a stack: the most recently returned (still warm in the cache) is
    /// lent first. Manually managed, so lending and returning are a load and a store.
    private let spare: UnsafeMutablePointer<(base: UnsafeMutableRawPointer, capacity: Int)>
    public private(set) var spareCount = 0
    /// At most this many spare storages are kept; more are freed.
    public let maxSpare: Int
    /// Storage that grew past this is freed rather than kept (one large write must not pin it).
    public let maxPooledCapacity: Int

    public init(maxSpare: Int = 64, maxPooledCapacity: Int = 64 * 1024) {
        self.maxSpare = maxSpare
        self.maxPooledCapacity = maxPooledCapacity
        spare = .allocate(capacity: maxSpare)
    }

    deinit {
        for index in 0..<spareCount { spare[index].base.deallocate() }
        spare.deallocate()
    }

    @usableFromInline
    func take() -> (base: UnsafeMutableRawPointer, capacity: Int)? {
        guard spareCount > 0 else { return nil }
        spareCount -= 1
        return spare[spareCount]
    }

    /// Frees spare storage beyond `count`, the least recently returned first (after a burst: the
    /// pool filled up while thousands of writes waited, and an idle loop needs few).
    public func trim(keeping count: Int) {
        let kept = max(0, min(count, spareCount))
        guard kept < spareCount else { return }
        for index in 0..<(spareCount - kept) { spare[index].base.deallocate() }
        // The most recently returned storages stay, in order, at the bottom of the stack.
        for index in 0..<kept { spare[index] = spare[spareCount - kept + index] }
        spareCount = kept
    }

    @usableFromInline
    func give(_ base: UnsafeMutableRawPointer, capacity: Int) {
        if spareCount < maxSpare && capacity <= maxPooledCapacity {
            spare[spareCount] = (base, capacity)
            spareCount += 1
        } else {
            base.deallocate()
        }
    }
}

extension ByteBuffer {
    /// Takes spare storage from `pool` if this buffer has none (a later append that needs more
    /// grows it as usual).
    @inlinable
    public mutating func borrowStorage(from pool: BufferPool) {
        guard storage == nil, let (base, capacity) = pool.take() else { return }
        storage = base
        storageCapacity = capacity
        used = 0
    }

    /// Gives the storage back to `pool`; the buffer must be empty. It holds nothing afterwards.
    @inlinable
    public mutating func returnStorage(to pool: BufferPool) {
        precondition(used == 0, "a buffer returns its storage only when empty")
        guard let base = storage else { return }
        pool.give(base, capacity: storageCapacity)
        storage = nil
        storageCapacity = 0
    }
}
