import Synchronization

/// A fixed number of counts that one thread increments and any thread reads.
///
/// The writer adds with a plain load and a plain store, no read-modify-write instruction and no
/// lock: it is the only thread that stores into these counts, so the value it loads is always its
/// own last store and nothing can come in between. Two threads incrementing at once would lose
/// counts (never tear them: each access is atomic), so the owner of the counts must hand them to
/// one writer at a time.
///
/// Ordering: the store is a release and the read an acquire. A reader that sees a count therefore
/// also sees everything the writer stored before that increment (`WorkerHistogram` stores its sum
/// first). On x86-64 they compile exactly like relaxed ones (the increment is one `inc` on memory,
/// no `lock` prefix); on AArch64 they are `stlr`/`ldar`, still no fence and no retry loop.
///
/// `@unchecked Sendable`: the counts live behind `slots`, allocated and initialized once in `init`,
/// never moved, and deinitialized in `deinit`, when no thread holds a reference. Every access to a
/// slot in between is an atomic load or store of an `Atomic<UInt64>`, so the writer and any number
/// of readers never race; the pointer itself is an immutable `let`.
final class SingleWriterCounts: @unchecked Sendable {
    let count: Int
    private let slots: UnsafeMutablePointer<Atomic<UInt64>>

    init(count: Int) {
        precondition(count > 0, "no counts to keep")
        self.count = count
        slots = .allocate(capacity: count)
        for index in 0..<count { (slots + index).initialize(to: Atomic(0)) }
    }

    deinit {
        slots.deinitialize(count: count)
        slots.deallocate()
    }

    /// Adds one to count `index`. Only from the one writing thread.
    @inline(__always)
    func increment(_ index: Int) {
        // The one check that keeps a wrong index from writing outside the allocation.
        precondition(UInt(bitPattern: index) < UInt(bitPattern: count), "count index out of range")
        let slot = slots + index
        slot.pointee.store(slot.pointee.load(ordering: .relaxed) &+ 1, ordering: .releasing)
    }

    /// Count `index` as last stored by the writer (or newer). Any thread.
    func value(_ index: Int) -> UInt64 {
        precondition(UInt(bitPattern: index) < UInt(bitPattern: count), "count index out of range")
        return slots[index].load(ordering: .acquiring)
    }
}
