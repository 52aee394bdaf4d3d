internal import CLibUV

/// Wakes a loop from another thread (`uv_async_t`): the one handle whose `wake()` may be called
/// from any thread. Several wakes before the loop runs coalesce into one callback.
public final class LoopWakeup: LoopHandle, @unchecked Sendable {
    var handle: UnsafeMutablePointer<uv_async_t> { storage.assumingMemoryBound(to: uv_async_t.self) }
    private var callback: (() -> Void)?

    public init(loop: EventLoop, callback: @escaping () -> Void) {
        self.callback = callback
        super.init(loop: loop, handleType: uv_async_t.self)
        uv_async_init(loop.uv, handle) { async in
            Unmanaged<LoopWakeup>.fromOpaque(async!.pointee.data)._withUnsafeGuaranteedRef { $0.callback?() }
        }
        didOpen()
    }

    /// Thread-safe.
    public func wake() {
        uv_async_send(handle)
    }

    override func willClose() {
        callback = nil
    }
}
