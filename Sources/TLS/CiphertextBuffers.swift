import ByteBuffers
internal import COpenSSL
import Synchronization

/// The engine's memory BIO: `incoming` is enc_in (ciphertext fed from the transport, read by
/// OpenSSL), `outgoing` is enc_out (records OpenSSL wrote, waiting to be sent).
///
/// A custom BIO over `ByteBuffer`s instead of two `BIO_s_mem`: OpenSSL writes records straight
/// into `outgoing`, and `TLSEngine.takeOutgoing` hands that storage to the caller by swapping
/// it with the caller's empty buffer, so sending costs no copy and, once both buffers have
/// grown, no allocation.
///
/// Ciphertext just read from the transport can be lent instead of fed (`lend`, for the length
/// of one `TLSEngine.read(fed:into:_:)`): OpenSSL then reads it where it lies, after what
/// `incoming` holds, and only what it leaves unread (the start of a record) is copied into
/// `incoming` (`keepUnreadLent`). A body then costs one copy fewer per byte (callgrind, a
/// download from a TLS upstream: each copy about one instruction per byte, a sixth of the relay's).
///
/// Or OpenSSL reads the transport itself (`source`, for the length of one
/// `TLSEngine.read(from:into:_:)`): once `incoming` and the lent bytes are drained, its reads go
/// to the source, which receives from the socket straight into OpenSSL's record buffer, so
/// ciphertext is never copied in user space.
///
/// Lifetime: the BIO holds one retained reference to its `CiphertextBuffers` (taken in
/// `makeBIO`, released in `destroyBIO` when `SSL_free` frees the BIO); the engine holds another.
final class CiphertextBuffers {
    var incoming = ByteBuffer()
    /// How many bytes at the front of `incoming` OpenSSL has read already.
    var incomingConsumed = 0
    /// Ciphertext after `incoming`, owned by the caller of `lend`; empty outside its read.
    private(set) var lent = UnsafeRawBufferPointer(start: nil, count: 0)
    /// How many bytes at the front of `lent` OpenSSL has read already.
    private(set) var lentConsumed = 0
    /// The transport ended: once `incoming` is drained, reads report end of file, not "retry".
    var incomingEnded = false
    var outgoing = ByteBuffer()
    /// Where reads go once `incoming` and the lent bytes are drained; nil outside
    /// `TLSEngine.read(from:into:_:)`.
    var source: (any CiphertextSource)?
    /// The source may hold more ciphertext: it filled every read asked of it so far (set when a
    /// source is given, cleared by a short or empty receive).
    var sourceMayHaveMore = false

    var incomingAvailable: Int { incoming.count - incomingConsumed + lent.count - lentConsumed }

    /// How many exist: each lives as long as both its engine and its BIO, so this counts
    /// engines with anything left to free (`TLSEngine.liveEngines`).
    static let live = Atomic<Int>(0)

    init() {
        Self.live.add(1, ordering: .relaxed)
    }

    deinit {
        Self.live.subtract(1, ordering: .relaxed)
    }

    func feed(_ ciphertext: UnsafeRawBufferPointer) {
        // Bytes fed while some are lent come after them.
        keepUnreadLent()
        if incomingConsumed > 0 {
            incoming.removeFirst(incomingConsumed)
            incomingConsumed = 0
        }
        incoming.append(ciphertext)
    }

    /// Lets OpenSSL read `ciphertext` in place, after `incoming`, until `keepUnreadLent`.
    func lend(_ ciphertext: UnsafeRawBufferPointer) {
        keepUnreadLent()
        lent = ciphertext
        lentConsumed = 0
    }

    /// Ends a `lend`: what OpenSSL has not read of the lent bytes is copied to `incoming`.
    func keepUnreadLent() {
        guard lent.count > 0 else { return }
        let unread = UnsafeRawBufferPointer(rebasing: lent[lentConsumed...])
        lent = UnsafeRawBufferPointer(start: nil, count: 0)
        lentConsumed = 0
        if !unread.isEmpty { feed(unread) }
    }

    /// Copies up to `count` bytes of ciphertext, `incoming`'s first then the lent ones, to
    /// `destination`; returns how many.
    fileprivate func read(into destination: UnsafeMutableRawPointer, count: Int) -> Int {
        var copied = 0
        let fromIncoming = min(count, incoming.count - incomingConsumed)
        if fromIncoming > 0, let start = incoming.baseAddress {
            destination.copyMemory(from: start + incomingConsumed, byteCount: fromIncoming)
            incomingConsumed += fromIncoming
            if incomingConsumed == incoming.count {
                incoming.clear()
                incomingConsumed = 0
            }
            copied = fromIncoming
        }
        let fromLent = min(count - copied, lent.count - lentConsumed)
        if fromLent > 0, let start = lent.baseAddress {
            (destination + copied).copyMemory(from: start + lentConsumed, byteCount: fromLent)
            lentConsumed += fromLent
            copied += fromLent
        }
        if copied == 0, sourceMayHaveMore, let source {
            copied = source.receiveCiphertext(into: UnsafeMutableRawBufferPointer(start: destination, count: count))
            if copied < count { sourceMayHaveMore = false }
        }
        return copied
    }

    /// A BIO reading `incoming` and writing `outgoing` of `buffers`, for both sides of one `SSL`.
    static func makeBIO(over buffers: CiphertextBuffers) -> OpaquePointer {
        guard let bio = BIO_new(bioMethod.method) else { fatalError("BIO_new: out of memory") }
        BIO_set_data(bio, Unmanaged.passRetained(buffers).toOpaque())
        BIO_set_init(bio, 1)
        return bio
    }
}

/// The `BIO_METHOD` of `CiphertextBuffers`, made once per process; OpenSSL only reads it.
private struct CiphertextBIOMethod: @unchecked Sendable {
    let method: OpaquePointer
}

private let bioMethod: CiphertextBIOMethod = {
    let type = BIO_get_new_index() | BIO_TYPE_SOURCE_SINK
    guard let method = BIO_meth_new(type, "oauth-relay ciphertext buffers") else {
        fatalError("BIO_meth_new: out of memory")
    }
    BIO_meth_set_write_ex(method, writeToOutgoing)
    BIO_meth_set_read_ex(method, readFromIncoming)
    BIO_meth_set_ctrl(method, controlBuffers)
    BIO_meth_set_destroy(method, destroyBIO)
    return CiphertextBIOMethod(method: method)
}()

private func buffers(of bio: OpaquePointer?) -> CiphertextBuffers {
    Unmanaged<CiphertextBuffers>.fromOpaque(BIO_get_data(bio)!).takeUnretainedValue()
}

/// OpenSSL writes a record (or part of one): append it to `outgoing`. Never blocks, never fails.
private func writeToOutgoing(bio: OpaquePointer?, data: UnsafePointer<CChar>?, length: Int,
                             written: UnsafeMutablePointer<Int>?) -> Int32 {
    shim_BIO_clear_retry_flags(bio)
    buffers(of: bio).outgoing.append(UnsafeRawBufferPointer(start: data, count: length))
    written?.pointee = length
    return 1
}

/// OpenSSL wants up to `length` bytes of ciphertext: copy what `incoming` and the lent bytes
/// hold, or receive them from the source. With nothing there, "retry" (OpenSSL reports
/// WANT_READ), or end of file once the transport ended.
private func readFromIncoming(bio: OpaquePointer?, data: UnsafeMutablePointer<CChar>?, length: Int,
                              read: UnsafeMutablePointer<Int>?) -> Int32 {
    shim_BIO_clear_retry_flags(bio)
    let buffers = buffers(of: bio)
    let count = data.map { buffers.read(into: UnsafeMutableRawPointer($0), count: length) } ?? 0
    guard count > 0 else {
        if !buffers.incomingEnded { shim_BIO_set_retry_read(bio) }
        read?.pointee = 0
        return 0
    }
    read?.pointee = count
    return 1
}

/// The controls OpenSSL's TLS code asks of its BIOs; anything else is "unsupported" (0).
private func controlBuffers(bio: OpaquePointer?, command: Int32, argument: Int, pointer: UnsafeMutableRawPointer?) -> Int {
    switch command {
    case BIO_CTRL_FLUSH:
        return 1
    case BIO_CTRL_PENDING:
        return buffers(of: bio).incomingAvailable
    case BIO_CTRL_WPENDING:
        return buffers(of: bio).outgoing.count
    case BIO_CTRL_EOF:
        let buffers = buffers(of: bio)
        return buffers.incomingEnded && buffers.incomingAvailable == 0 ? 1 : 0
    default:
        return 0
    }
}

private func destroyBIO(bio: OpaquePointer?) -> Int32 {
    guard let bio, let data = BIO_get_data(bio) else { return 1 }
    Unmanaged<CiphertextBuffers>.fromOpaque(data).release()
    BIO_set_data(bio, nil)
    return 1
}
