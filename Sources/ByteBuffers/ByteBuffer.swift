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
    // `@usableFromInline` storage and `@inlinable` methods: the buffer is written on every
    // request from other modules, where a call per append would cost more than the copy.
    @usableFromInline var storage: UnsafeMutableRawPointer?
    @usableFromInline var storageCapacity: Int
    @usableFromInline var used: Int

    /// Storage; nil until the first byte is appended.
    @inlinable public var baseAddress: UnsafeMutableRawPointer? { storage }
    @inlinable public var capacity: Int { storageCapacity }
    /// Number of bytes in use, from `baseAddress`.
    @inlinable public var count: Int { used }

    @inlinable
    public init(capacity: Int = 0) {
        storageCapacity = 0
        used = 0
        storage = nil
        if capacity > 0 { reserveCapacity(capacity) }
    }

    deinit {
        storage?.deallocate()
    }

    @inlinable
    public var isEmpty: Bool { used == 0 }

    @inlinable
    public var readableBytes: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: storage, count: used)
    }

    /// Grows the storage to hold at least `minimumCapacity` bytes; invalidates `storage`.
    @inlinable
    public mutating func reserveCapacity(_ minimumCapacity: Int) {
        if minimumCapacity > storageCapacity { grow(to: minimumCapacity) }
    }

    @usableFromInline
    mutating func grow(to minimumCapacity: Int) {
        var newCapacity = max(storageCapacity, 256)
        while newCapacity < minimumCapacity { newCapacity *= 2 }
        let newBase = UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: 16)
        if let old = storage {
            newBase.copyMemory(from: old, byteCount: used)
            old.deallocate()
        }
        storage = newBase
        storageCapacity = newCapacity
    }

    @inlinable @inline(__always)
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress, bytes.count > 0 else { return }
        reserveCapacity(used &+ bytes.count)
        Self.copy(bytes.count, from: source, to: end)
        used &+= bytes.count
    }

    /// The first byte past the ones in use, once capacity for at least one more was reserved
    /// (storage then exists: no unwrapping check per append).
    @inlinable @inline(__always)
    var end: UnsafeMutableRawPointer { storage.unsafelyUnwrapped + used }

    /// Copies without a call for the short pieces heads are made of (names, values, `: `,
    /// whole field lines), where calling memcpy costs more than the copy: two overlapping words
    /// for 2 to 32 bytes (of 16 bytes from 17 on), four for 33 to 64.
    /// `source` and `destination` may not overlap.
    @inlinable @inline(__always)
    static func copy(_ count: Int, from source: UnsafeRawPointer, to destination: UnsafeMutableRawPointer) {
        switch count {
        case 33...64:
            // Two overlapping halves of 32 bytes, each two overlapping words of 16.
            let a = source.loadUnaligned(as: SIMD16<UInt8>.self)
            let b = source.loadUnaligned(fromByteOffset: 16, as: SIMD16<UInt8>.self)
            let c = source.loadUnaligned(fromByteOffset: count &- 32, as: SIMD16<UInt8>.self)
            let d = source.loadUnaligned(fromByteOffset: count &- 16, as: SIMD16<UInt8>.self)
            destination.storeBytes(of: a, as: SIMD16<UInt8>.self)
            destination.storeBytes(of: b, toByteOffset: 16, as: SIMD16<UInt8>.self)
            destination.storeBytes(of: c, toByteOffset: count &- 32, as: SIMD16<UInt8>.self)
            destination.storeBytes(of: d, toByteOffset: count &- 16, as: SIMD16<UInt8>.self)
        case 17...32:
            let first = source.loadUnaligned(as: SIMD16<UInt8>.self)
            let last = source.loadUnaligned(fromByteOffset: count &- 16, as: SIMD16<UInt8>.self)
            destination.storeBytes(of: first, as: SIMD16<UInt8>.self)
            destination.storeBytes(of: last, toByteOffset: count &- 16, as: SIMD16<UInt8>.self)
        case 8...16:
            let first = source.loadUnaligned(as: UInt64.self)
            let last = source.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)
            destination.storeBytes(of: first, as: UInt64.self)
            destination.storeBytes(of: last, toByteOffset: count - 8, as: UInt64.self)
        case 4..<8:
            let first = source.loadUnaligned(as: UInt32.self)
            let last = source.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self)
            destination.storeBytes(of: first, as: UInt32.self)
            destination.storeBytes(of: last, toByteOffset: count - 4, as: UInt32.self)
        case 2..<4:
            let first = source.loadUnaligned(as: UInt16.self)
            let last = source.loadUnaligned(fromByteOffset: count &- 2, as: UInt16.self)
            destination.storeBytes(of: first, as: UInt16.self)
            destination.storeBytes(of: last, toByteOffset: count &- 2, as: UInt16.self)
        case 1:
            destination.storeBytes(of: source.load(as: UInt8.self), as: UInt8.self)
        case 0:
            break
        default:
            destination.copyMemory(from: source, byteCount: count)
        }
    }

    /// `append(_:)` of bytes that a `reserveCapacity(count + n)` made room for, with no capacity
    /// check: a writer of several pieces (a head's line) reserves once for all of them.
    @inlinable @inline(__always)
    public mutating func appendReserved(_ bytes: UnsafeRawBufferPointer) {
        assert(used + bytes.count <= storageCapacity, "appendReserved past the reserved capacity")
        guard let source = bytes.baseAddress else { return }
        Self.copy(bytes.count, from: source, to: end)
        used &+= bytes.count
    }

    /// `appendReserved` of a literal.
    @inlinable @inline(__always)
    public mutating func appendReserved(_ string: StaticString) {
        appendReserved(UnsafeRawBufferPointer(start: string.utf8Start, count: string.utf8CodeUnitCount))
    }

    /// `appendReserved` of one byte.
    @inlinable @inline(__always)
    public mutating func appendReserved(_ byte: UInt8) {
        assert(used < storageCapacity, "appendReserved past the reserved capacity")
        end.storeBytes(of: byte, as: UInt8.self)
        used &+= 1
    }

    /// Stores `word`'s eight bytes (little-endian) at the end and counts the first `count` of
    /// them as appended: up to eight bytes of a line in one store, the rest of the word to be
    /// overwritten by what follows. Room for all eight must be reserved.
    @inlinable @inline(__always)
    public mutating func appendReserved(_ word: UInt64, count: Int) {
        assert(used + 8 <= storageCapacity && count <= 8, "appendReserved past the reserved capacity")
        end.storeBytes(of: word.littleEndian, as: UInt64.self)
        used &+= count
    }

    @inlinable @inline(__always)
    public mutating func append(_ byte: UInt8) {
        reserveCapacity(used &+ 1)
        end.storeBytes(of: byte, as: UInt8.self)
        used &+= 1
    }

    /// Inlined always: the literal's address and length are then constants at the call site
    /// (heads are written from a dozen literals per request).
    @inlinable @inline(__always)
    public mutating func append(_ string: StaticString) {
        append(UnsafeRawBufferPointer(start: string.utf8Start, count: string.utf8CodeUnitCount))
    }

    /// Inlined always: heads are written with a few prepared lines (`[UInt8]`) each, and a call
    /// per line cost more than its copy.
    @inlinable @inline(__always)
    public mutating func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { append($0) }
    }

    /// A `String`'s UTF-8. Labelled, so that a literal argument (`append("\r\n")`) takes the
    /// `StaticString` overload, which copies from the binary without touching a String.
    @inlinable
    public mutating func append(utf8 string: String) {
        var string = string
        string.withUTF8 { append(UnsafeRawBufferPointer($0)) }
    }

    /// Appends `value` in decimal.
    @inlinable
    public mutating func appendDecimal(_ value: Int) {
        appendDecimal(UInt64(max(0, value)))
    }

    /// Numbers below 1000 (every status code, most Content-Lengths of small answers) are
    /// written inline with constant divisions; larger ones by `appendInteger`.
    @inlinable
    public mutating func appendDecimal(_ value: UInt64) {
        guard value < 1000 else { return appendInteger(value, radix: 10) }
        let hundreds = UInt8(truncatingIfNeeded: value / 100), tens = UInt8(truncatingIfNeeded: value / 10 % 10)
        let ones = UInt8(truncatingIfNeeded: value % 10)
        let digits = value >= 100 ? 3 : value >= 10 ? 2 : 1
        reserveCapacity(used &+ digits)
        let last = end + digits
        last.storeBytes(of: 0x30 + ones, toByteOffset: -1, as: UInt8.self)
        if digits >= 2 { last.storeBytes(of: 0x30 + tens, toByteOffset: -2, as: UInt8.self) }
        if digits == 3 { last.storeBytes(of: 0x30 + hundreds, toByteOffset: -3, as: UInt8.self) }
        used &+= digits
    }

    /// Appends `value` in lower-case hexadecimal (chunk sizes).
    @inlinable
    public mutating func appendHex(_ value: UInt64) {
        appendInteger(value, radix: 16)
    }

    @usableFromInline
    mutating func appendInteger(_ value: UInt64, radix: UInt64) {
        var digits = 1
        var probe = value
        while probe >= radix { probe /= radix; digits += 1 }
        reserveCapacity(used + digits)
        var rest = value
        var position = used + digits - 1
        repeat {
            let digit = UInt8(truncatingIfNeeded: rest % radix)
            // 0x57 + 10 == "a".
            storage!.storeBytes(of: digit < 10 ? 0x30 + digit : 0x57 + digit, toByteOffset: position, as: UInt8.self)
            rest /= radix
            position -= 1
        } while rest > 0
        used += digits
    }

    /// Drops the first `n` bytes, moving the rest to the front.
    @inlinable
    public mutating func removeFirst(_ n: Int) {
        precondition(n <= used)
        if n == used { used = 0; return }
        storage!.copyMemory(from: storage! + n, byteCount: used - n)
        used -= n
    }

    /// Forgets the contents and keeps the storage for reuse.
    @inlinable
    public mutating func clear() {
        used = 0
    }

    /// Swaps contents and storage with `other` (double buffering without copying).
    @inlinable
    public mutating func swapStorage(with other: inout ByteBuffer) {
        swap(&storage, &other.storage)
        swap(&storageCapacity, &other.storageCapacity)
        swap(&used, &other.used)
    }

    /// Frees the storage if it grew past `limit`, so one large message does not pin memory
    /// for the rest of a long-lived connection.
    @inlinable
    public mutating func shrink(ifLargerThan limit: Int) {
        guard storageCapacity > limit, used == 0 else { return }
        storage?.deallocate()
        storage = nil
        storageCapacity = 0
    }
}

/// The bytes of a string literal; they live in the binary, so the view never dangles.
@inlinable
public func staticBytes(_ text: StaticString) -> UnsafeRawBufferPointer {
    UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount)
}
