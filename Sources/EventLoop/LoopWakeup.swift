internal import CLibUV
import Locking

/// Wakes a loop from another thread (`uv_async_t`): the one handle whose `wake()` may be called
/// from any thread. Several wakes before the loop runs coalesce into one callback.
///
/// `wake()` may race with `close()` (a worker that drains closes its wake-up while the token
/// thread still holds it): both take `open`'s lock, `close()` clears it before `uv_close`, and
/// `wake()` sends only while it is set, so no `uv_async_send` can reach a handle that is closing
/// or whose memory the close callback has freed. A wake after close does nothing.
///
/// `@unchecked Sendable`: the only members used off the loop's thread are `wake()` and the
/// `open` flag it reads under its lock; everything else (`callback`, the handle bookkeeping of
/// `LoopHandle`) is touched on the loop's thread only (rule 4 of EventLoop.swift).
public final class LoopWakeup: LoopHandle, @unchecked Sendable {
    var handle: UnsafeMutablePointer<uv_async_t> { storage.assumingMemoryBound(to: uv_async_t.self) }
    private var callback: (() -> Void)?
    private let open = Locked(false)

    public init(loop: EventLoop, callback: @escaping () -> Void) {
        self.callback = callback
        super.init(loop: loop, handleType: uv_async_t.self)
        uv_async_init(loop.uv, handle) { async in
            Unmanaged<LoopWakeup>.fromOpaque(async!.pointee.data)._withUnsafeGuaranteedRef { $0.callback?() }
        }
        didOpen()
        open.withLock { $0 = true }
    }

    /// Thread-safe; does nothing once `close()` has begun.
    public func wake() {
        open.withLock { isOpen in
            if isOpen { uv_async_send(handle) }
        }
    }

    override func willClose() {
        open.withLock { $0 = false }
        callback = nil
    }
}
