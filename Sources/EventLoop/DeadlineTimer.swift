/// A timeout that is re-armed far more often than it fires (a connection's idle, header or
/// response timeout, pushed back on every request or read). Re-arming only records the new
/// deadline; the timer moves in its loop's `DeadlineQueue` only when the deadline moves earlier
/// than the time it is already scheduled for, and when it comes up early it is scheduled again
/// for the recorded deadline. That keeps heap work and libuv timer calls off the per-request path.
///
/// The owner calls `close()` when done: until then the loop's queue holds the timer.
public final class DeadlineTimer {
    private let loop: EventLoop
    private var onExpiry: () -> Void
    /// When the callback is due (loop milliseconds); `disarmed` when not armed. Not an optional:
    /// its tag byte would take the timer past 72 bytes, into malloc's next size class, and
    /// every connection holds a timer.
    private var deadline = disarmed
    private static let disarmed = UInt64.max
    /// Where this timer sits in the loop's `DeadlineQueue` (-1: not scheduled), and for when.
    var heapIndex = -1
    var scheduledAt: UInt64 = 0
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
        if heapIndex >= 0 && scheduledAt <= due { return }
        guard !closed else { return }
        loop.deadlines.schedule(self, at: due)
    }

    /// The callback will not run; the timer may stay scheduled, and come up once, harmlessly.
    public func disarm() {
        deadline = Self.disarmed
    }

    public func close() {
        closed = true
        deadline = Self.disarmed
        loop.deadlines.remove(self)
    }

    /// The loop's queue took this timer out at the time it was scheduled for.
    func scheduledTimeCame() {
        guard deadline != Self.disarmed else { return }
        if loop.nowMilliseconds < deadline {
            loop.deadlines.schedule(self, at: deadline)
            return
        }
        deadline = Self.disarmed
        onExpiry()
    }
}
