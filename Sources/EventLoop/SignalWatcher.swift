internal import CLibUV
#if canImport(Glibc)
import Glibc
#endif

/// Delivers a POSIX signal as a callback on a loop (`uv_signal_t`).
public final class SignalWatcher: LoopHandle {
    var handle: UnsafeMutablePointer<uv_signal_t> { storage.assumingMemoryBound(to: uv_signal_t.self) }
    private var callback: ((Int32) -> Void)?

    public init(loop: EventLoop, signal number: Int32, callback: @escaping (Int32) -> Void) {
        self.callback = callback
        super.init(loop: loop, handleType: uv_signal_t.self)
        uv_signal_init(loop.uv, handle)
        didOpen()
        uv_signal_start(handle, { signal, number in
            Unmanaged<SignalWatcher>.fromOpaque(signal!.pointee.data)._withUnsafeGuaranteedRef { $0.callback?(number) }
        }, number)
    }

    override func willClose() {
        callback = nil
    }

    /// A write to a socket the peer closed must be an error (EPIPE), not a process kill.
    public static func ignoreBrokenPipe() {
        _ = Glibc.signal(SIGPIPE, SIG_IGN)
    }

    public static let terminate = SIGTERM
    public static let interrupt = SIGINT
    public static let hangUp = SIGHUP
}
