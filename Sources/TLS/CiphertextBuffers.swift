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
/// Lifetime: the BIO holds one retained reference to its `CiphertextBuffers` (taken in
/// `makeBIO`, released in `destroyBIO` when `SSL_free` frees the BIO); the engine holds another.
final class CiphertextBuffers {
    var incoming = ByteBuffer()
    /// How many bytes at the front of `incoming` OpenSSL has read already.
    var incomingConsumed = 0
    /// The transport ended: once `incoming` is drained, reads report end of file, not "retry".
    var incomingEnded = false
    var outgoing = ByteBuffer()

    var incomingAvailable: Int { incoming.count - incomingConsumed }

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
        if incomingConsumed > 0 {
            incoming.removeFirst(incomingConsumed)
            incomingConsumed = 0
        }
        incoming.append(ciphertext)
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

/// OpenSSL wants up to `length` bytes of ciphertext: copy what `incoming` holds. With nothing
/// there, "retry" (OpenSSL reports WANT_READ), or end of file once the transport ended.
private func readFromIncoming(bio: OpaquePointer?, data: UnsafeMutablePointer<CChar>?, length: Int,
                              read: UnsafeMutablePointer<Int>?) -> Int32 {
    shim_BIO_clear_retry_flags(bio)
    let buffers = buffers(of: bio)
    let count = min(length, buffers.incomingAvailable)
    guard count > 0, let data, let start = buffers.incoming.baseAddress else {
        if !buffers.incomingEnded { shim_BIO_set_retry_read(bio) }
        read?.pointee = 0
        return 0
    }
    UnsafeMutableRawPointer(data).copyMemory(from: start + buffers.incomingConsumed, byteCount: count)
    buffers.incomingConsumed += count
    if buffers.incomingConsumed == buffers.incoming.count {
        buffers.incoming.clear()
        buffers.incomingConsumed = 0
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
