// A growable byte buffer with manually managed storage.
//
// Why not `[UInt8]`: libuv keeps a pointer to the bytes of a write request until its callback
// runs, and a pointer taken inside `withUnsafeBytes` must not escape the closure. A
// `ByteBuffer` owns its storage directly, so `baseAddress` stays valid until the next call that
// grows or frees it, and the rules for that are visible in one place (this file).
//
// It is non-copyable: exactly one owner frees the storage, and an accidental copy of a
// connection's buffer (with a second free) cannot compile.

public struct ByteBuffer: ~Copyable {
    /// Storage; nil until the first byte is appended.
    public private(set) var baseAddress: UnsafeMutableRawPointer?
    public private(set) var capacity: Int
    /// Number of bytes in use, from `baseAddress`.
    public private(set) var count: Int

    public init(capacity: Int = 0) {
        self.capacity = 0
        self.count = 0
        self.baseAddress = nil
        if capacity > 0 { reserveCapacity(capacity) }
    }

    deinit {
        baseAddress?.deallocate()
    }

    public var isEmpty: Bool { count == 0 }

    public var readableBytes: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: baseAddress, count: count)
    }

    /// Grows the storage to hold at least `minimumCapacity` bytes; invalidates `baseAddress`.
    public mutating func reserveCapacity(_ minimumCapacity: Int) {
        guard minimumCapacity > capacity else { return }
        var newCapacity = max(capacity, 256)
        while newCapacity < minimumCapacity { newCapacity *= 2 }
        let newBase = UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: 16)
        if let old = baseAddress {
            newBase.copyMemory(from: old, byteCount: count)
            old.deallocate()
        }
        baseAddress = newBase
        capacity = newCapacity
    }

    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress, bytes.count > 0 else { return }
        reserveCapacity(count + bytes.count)
        (baseAddress! + count).copyMemory(from: source, byteCount: bytes.count)
        count += bytes.count
    }

    public mutating func append(_ byte: UInt8) {
        reserveCapacity(count + 1)
        baseAddress!.storeBytes(of: byte, toByteOffset: count, as: UInt8.self)
        count += 1
    }

    public mutating func append(_ string: StaticString) {
        append(UnsafeRawBufferPointer(start: string.utf8Start, count: string.utf8CodeUnitCount))
    }

    public mutating func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { append($0) }
    }

    public mutating func append(_ string: String) {
        var string = string
        string.withUTF8 { append(UnsafeRawBufferPointer($0)) }
    }

    /// Appends `value` in decimal.
    public mutating func appendDecimal(_ value: Int) {
        appendInteger(UInt64(max(0, value)), radix: 10)
    }

    /// Appends `value` in lower-case hexadecimal (chunk sizes).
    public mutating func appendHex(_ value: UInt64) {
        appendInteger(value, radix: 16)
    }

    private mutating func appendInteger(_ value: UInt64, radix: UInt64) {
        var digits = 1
        var probe = value
        while probe >= radix { probe /= radix; digits += 1 }
        reserveCapacity(count + digits)
        var rest = value
        var position = count + digits - 1
        repeat {
            let digit = UInt8(truncatingIfNeeded: rest % radix)
            // 0x57 + 10 == "a".
            baseAddress!.storeBytes(of: digit < 10 ? 0x30 + digit : 0x57 + digit, toByteOffset: position, as: UInt8.self)
            rest /= radix
            position -= 1
        } while rest > 0
        count += digits
    }

    /// Drops the first `n` bytes, moving the rest to the front.
    public mutating func removeFirst(_ n: Int) {
        precondition(n <= count)
        if n == count { count = 0; return }
        baseAddress!.copyMemory(from: baseAddress! + n, byteCount: count - n)
        count -= n
    }

    /// Forgets the contents and keeps the storage for reuse.
    public mutating func clear() {
        count = 0
    }

    /// Swaps contents and storage with `other` (double buffering without copying).
    public mutating func swapStorage(with other: inout ByteBuffer) {
        swap(&baseAddress, &other.baseAddress)
        swap(&capacity, &other.capacity)
        swap(&count, &other.count)
    }

    /// Frees the storage if it grew past `limit`, so one large message does not pin memory
    /// for the rest of a long-lived connection.
    public mutating func shrink(ifLargerThan limit: Int) {
        guard capacity > limit, count == 0 else { return }
        baseAddress?.deallocate()
        baseAddress = nil
        capacity = 0
    }
}

/// The bytes of a string literal; they live in the binary, so the view never dangles.
@inline(__always)
public func staticBytes(_ text: StaticString) -> UnsafeRawBufferPointer {
    UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount)
}
