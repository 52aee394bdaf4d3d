/// A timeout that is re-armed far more often than it fires (a connection's idle, header or
/// response timeout, pushed back on every request or read). Re-arming only records the new
/// deadline; libuv's timer is touched only when the deadline moves earlier than the time it is
/// already set for, and when it fires early it sleeps again until the recorded deadline.
/// That keeps `uv_timer_start`/`uv_timer_stop` off the per-request path.
public final class DeadlineTimer {
    private let loop: EventLoop
    private var timer: LoopTimer?
    private var onExpiry: () -> Void
    /// When the callback is due (loop milliseconds); nil when disarmed.
    private var deadline: UInt64?
    /// When the libuv timer is set to fire; nil when it is not running.
    private var scheduledAt: UInt64?
    /// After `close()` arming does nothing.
    private var closed = false

    public init(loop: EventLoop, onExpiry: @escaping () -> Void) {
        self.loop = loop
        self.onExpiry = onExpiry
    }

    /// A timer whose callback is set later (`whenExpired`), so that an owner can hold it in a
    /// `let` and still have the callback capture the owner.
    public convenience init(loop: EventLoop) {
        self.init(loop: loop) {}
    }

    public func whenExpired(_ body: @escaping () -> Void) {
        onExpiry = body
    }

    public func arm(afterMilliseconds milliseconds: UInt64) {
        arm(at: loop.nowMilliseconds + milliseconds)
    }

    /// Arms for `due`, in the loop's milliseconds (for a caller that just read the clock).
    public func arm(at due: UInt64) {
        deadline = due
        if let scheduledAt, scheduledAt <= due { return }
        schedule(at: due)
    }

    /// The callback will not run; the libuv timer may still wake once, harmlessly.
    public func disarm() {
        deadline = nil
    }

    public func close() {
        closed = true
        deadline = nil
        scheduledAt = nil
        timer?.close()
        timer = nil
    }

    private func schedule(at due: UInt64) {
        guard !closed else { return }
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
