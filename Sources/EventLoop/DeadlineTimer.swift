/// A timeout that is re-armed far more often than it fires (a connection's idle, header or
/// response timeout, pushed back on every request or read). Re-arming only records the new
/// deadline; libuv's timer is touched only when the deadline moves earlier than the time it is
/// already set for, and when it fires early it sleeps again until the recorded deadline.
/// That keeps `uv_timer_start`/`uv_timer_stop` off the per-request path.
public final class DeadlineTimer {
    private let loop: EventLoop
    private var timer: LoopTimer?
    private let onExpiry: () -> Void
    /// When the callback is due (loop milliseconds); nil when disarmed.
    private var deadline: UInt64?
    /// When the libuv timer is set to fire; nil when it is not running.
    private var scheduledAt: UInt64?

    public init(loop: EventLoop, onExpiry: @escaping () -> Void) {
        self.loop = loop
        self.onExpiry = onExpiry
    }

    public func arm(afterMilliseconds milliseconds: UInt64) {
        let due = loop.nowMilliseconds + milliseconds
        deadline = due
        if let scheduledAt, scheduledAt <= due { return }
        schedule(at: due)
    }

    /// The callback will not run; the libuv timer may still wake once, harmlessly.
    public func disarm() {
        deadline = nil
    }

    public func close() {
        deadline = nil
        scheduledAt = nil
        timer?.close()
        timer = nil
    }

    private func schedule(at due: UInt64) {
        if timer == nil {
            timer = LoopTimer(loop: loop) { [unowned self] in self.fired() }
        }
        scheduledAt = due
        timer?.start(afterMilliseconds: due - min(due, loop.nowMilliseconds))
    }

    private func fired() {
        scheduledAt = nil
        guard let deadline else { return }
        let now = loop.nowMilliseconds
        if now < deadline {
            schedule(at: deadline)
            return
        }
        self.deadline = nil
        onExpiry()
    }
}
