internal import CLibUV

/// A one-shot or repeating timer on one loop (`uv_timer_t`).
public final class LoopTimer: LoopHandle {
    var handle: UnsafeMutablePointer<uv_timer_t> { storage.assumingMemoryBound(to: uv_timer_t.self) }
    private var callback: (() -> Void)?

    public init(loop: EventLoop, callback: @escaping () -> Void) {
        self.callback = callback
        super.init(loop: loop, handleType: uv_timer_t.self)
        uv_timer_init(loop.uv, handle)
        didOpen()
    }

    /// (Re)arms the timer; a running one is restarted.
    public func start(afterMilliseconds timeout: UInt64, repeatMilliseconds: UInt64 = 0) {
        guard !isClosed else { return }
        uv_timer_start(handle, { timer in
            Unmanaged<LoopTimer>.fromOpaque(timer!.pointee.data)._withUnsafeGuaranteedRef { $0.callback?() }
        }, timeout, repeatMilliseconds)
    }

    public func stop() {
        guard !isClosed else { return }
        uv_timer_stop(handle)
    }

    /// Does not keep the loop running on its own (for watchdog and housekeeping timers).
    public func unref() {
        uv_unref(uvHandle)
    }

    override func willClose() {
        callback = nil
    }
}
