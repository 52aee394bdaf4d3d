internal import CLibUV

/// A one-shot or repeating timer on one loop (`uv_timer_t`).
public final class LoopTimer: HandleOwner {
    private let loop: EventLoop
    private let timer: UnsafeMutablePointer<uv_timer_t>
    private var callback: (() -> Void)?
    private var closed = false

    public init(loop: EventLoop, callback: @escaping () -> Void) {
        self.loop = loop
        self.callback = callback
        timer = .allocate(capacity: 1)
        uv_timer_init(loop.uv, timer)
        timer.pointee.data = Unmanaged.passRetained(self).toOpaque()
        loop.openHandles += 1
    }

    /// (Re)arms the timer; a running one is restarted.
    public func start(afterMilliseconds timeout: UInt64, repeatMilliseconds: UInt64 = 0) {
        guard !closed else { return }
        uv_timer_start(timer, { timer in
            let owner = Unmanaged<LoopTimer>.fromOpaque(timer!.pointee.data).takeUnretainedValue()
            owner.callback?()
        }, timeout, repeatMilliseconds)
    }

    public func stop() {
        guard !closed else { return }
        uv_timer_stop(timer)
    }

    /// Does not keep the loop running on its own (for housekeeping timers).
    public func unref() {
        uv_unref(UnsafeMutablePointer(OpaquePointer(timer)))
    }

    public func close() {
        guard !closed else { return }
        closed = true
        callback = nil
        closeHandle(UnsafeMutablePointer(OpaquePointer(timer)))
    }

    func handleDidClose() {
        loop.openHandles -= 1
        timer.deallocate()
    }
}
