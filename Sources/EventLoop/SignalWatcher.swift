internal import CLibUV
#if canImport(Glibc)
import Glibc
#endif

/// Delivers a POSIX signal as a callback on a loop (`uv_signal_t`).
public final class SignalWatcher: HandleOwner {
    private let loop: EventLoop
    private let signal: UnsafeMutablePointer<uv_signal_t>
    private var callback: ((Int32) -> Void)?
    private var closed = false

    public init(loop: EventLoop, signal number: Int32, callback: @escaping (Int32) -> Void) {
        self.loop = loop
        self.callback = callback
        signal = .allocate(capacity: 1)
        uv_signal_init(loop.uv, signal)
        signal.pointee.data = Unmanaged.passRetained(self).toOpaque()
        loop.openHandles += 1
        uv_signal_start(signal, { signal, number in
            let owner = Unmanaged<SignalWatcher>.fromOpaque(signal!.pointee.data).takeUnretainedValue()
            owner.callback?(number)
        }, number)
    }

    public func close() {
        guard !closed else { return }
        closed = true
        callback = nil
        closeHandle(UnsafeMutablePointer(OpaquePointer(signal)))
    }

    func handleDidClose() {
        loop.openHandles -= 1
        signal.deallocate()
    }

    /// A write to a socket the peer closed must be an error (EPIPE), not a process kill.
    public static func ignoreBrokenPipe() {
        _ = Glibc.signal(SIGPIPE, SIG_IGN)
    }

    public static let terminate = SIGTERM
    public static let interrupt = SIGINT
    public static let hangUp = SIGHUP
}
