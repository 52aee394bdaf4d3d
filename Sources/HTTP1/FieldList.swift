/// The field slots of one head (or of its trailers), in storage the head owns. A head is parsed
/// a dozen fields at a time on every request: an `Array` there cost a uniqueness check per
/// append, a reference count per read and a generic `removeAll` per message; this costs a
/// bounds check per append and a store per reset. Readers get an `UnsafeMutableBufferPointer`
/// view, valid until the next append (the parser's next `feed`), like the head's bytes.
struct FieldList: ~Copyable {
    private var storage: UnsafeMutablePointer<FieldSlot>?
    private var capacity = 0
    private(set) var count = 0

    init() {}

    deinit {
        storage?.deallocate()
    }

    var view: UnsafeMutableBufferPointer<FieldSlot> { UnsafeMutableBufferPointer(start: storage, count: count) }

    @inline(__always)
    mutating func append(_ field: FieldSlot) {
        if count == capacity { grow() }
        // Below capacity, so the storage exists; the count is below it, so adding one cannot overflow.
        (storage.unsafelyUnwrapped + count).initialize(to: field)
        count &+= 1
    }

    /// Forgets the fields; the storage stays for the next message unless it grew past
    /// `keptCapacity` slots (a head with hundreds of fields does not pin its storage).
    @inline(__always)
    mutating func removeAll(keepingAtMost keptCapacity: Int) {
        count = 0
        if capacity > keptCapacity {
            storage?.deallocate()
            storage = nil
            capacity = 0
        }
    }

    private mutating func grow() {
        let newCapacity = max(16, capacity * 2)
        let grown = UnsafeMutablePointer<FieldSlot>.allocate(capacity: newCapacity)
        if let storage {
            // FieldSlot is a trivial type: moving is copying.
            grown.moveInitialize(from: storage, count: count)
            storage.deallocate()
        }
        storage = grown
        capacity = newCapacity
    }
}
