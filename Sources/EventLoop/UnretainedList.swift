/// A growable list of objects it does not retain: the streams written to during one read
/// callback (rule 6), which their open handles keep alive until the batch is flushed (see
/// `EventLoop.batchedStreams`). Unlike an `Array`, appending checks no uniqueness and emptying
/// calls nothing: the array's `removeAll(keepingCapacity:)` cost a runtime call to destroy its
/// (trivial) elements at every read. The storage is kept, and grows by doubling.
struct UnretainedList<Element: AnyObject>: ~Copyable {
    private var base: UnsafeMutablePointer<Unmanaged<Element>>
    private var capacity: Int
    private(set) var count = 0

    init(capacity: Int = 4) {
        precondition(capacity > 0)
        base = .allocate(capacity: capacity)
        self.capacity = capacity
    }

    deinit {
        base.deallocate()
    }

    var isEmpty: Bool { count == 0 }

    mutating func append(_ element: Element) {
        if count == capacity { grow() }
        (base + count).initialize(to: .passUnretained(element))
        count += 1
    }

    /// Unretained: the caller knows the element is alive (`_withUnsafeGuaranteedRef`).
    subscript(index: Int) -> Unmanaged<Element> {
        precondition(index >= 0 && index < count)
        return base[index]
    }

    /// Empties the list and keeps its storage.
    mutating func removeAll() {
        count = 0
    }

    private mutating func grow() {
        let larger = UnsafeMutablePointer<Unmanaged<Element>>.allocate(capacity: capacity * 2)
        larger.moveInitialize(from: base, count: count)
        base.deallocate()
        base = larger
        capacity *= 2
    }
}
