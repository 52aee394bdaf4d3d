/// A transport OpenSSL reads from directly, for `TLSEngine.read(from:into:_:)`: each receive
/// lands in OpenSSL's record buffer, with no copy by the caller.
public protocol CiphertextSource: AnyObject {
    /// Receives up to `space.count` bytes into `space` without blocking; returns how many.
    /// 0 means nothing more now: the socket is empty, reading stopped, or the transport ended
    /// or failed (the source keeps that, for its owner to act on once the engine's read
    /// returns). A count short of `space.count` also tells the engine the source is drained.
    func receiveCiphertext(into space: UnsafeMutableRawBufferPointer) -> Int
}
