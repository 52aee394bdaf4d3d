internal import CLibUV

/// Wakes a loop from another thread (`uv_async_t`): the one handle whose `wake()` may be called
/// from any thread. Several wakes before the loop runs coalesce into one callback.
public final class LoopWakeup: HandleOwner, @unchecked Sendable {
    private let loop: EventLoop
    private let async: UnsafeMutablePointer<uv_async_t>
    private var callback: (() -> Void)?
    private var closed = false

    public init(loop: EventLoop, callback: @escaping () -> Void) {
        self.loop = loop
        self.callback = callback
        async = .allocate(capacity: 1)
        uv_async_init(loop.uv, async) { async in
            let owner = Unmanaged<LoopWakeup>.fromOpaque(async!.pointee.data).takeUnretainedValue()
            owner.callback?()
        }
        async.pointee.data = Unmanaged.passRetained(self).toOpaque()
        loop.openHandles += 1
    }

    /// Thread-safe.
    public func wake() {
        uv_async_send(async)
    }

    /// Loop thread only.
    public func close() {
        guard !closed else { return }
        closed = true
        callback = nil
        closeHandle(UnsafeMutablePointer(OpaquePointer(async)))
    }

    func handleDidClose() {
        loop.openHandles -= 1
        async.deallocate()
    }
}
