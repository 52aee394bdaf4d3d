#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An exclusive `flock` on one identity's lock file, shared by every process (and every open
/// of the file) on the machine: whoever holds it is the only one fetching that identity's
/// token and writing its entry. The lock is on a separate file, not the entry, because a write
/// replaces the entry's inode (rename) and a lock on the old inode would protect nothing.
///
/// Released by `release()` or when the value goes away; the kernel also releases it when the
/// process dies, so a killed relay never leaves an entry locked.
public final class EntryLock {
    public let path: String
    private var descriptor: Int32

    private init(path: String, descriptor: Int32) {
        self.path = path
        self.descriptor = descriptor
    }

    deinit {
        release()
    }

    /// The lock, or nil at once when someone else holds it. Never blocks: the token loop polls
    /// with a timer instead (see Tokens/TokenPersistence.swift), so other identities go on meanwhile.
    public static func tryAcquire(path: String) throws(StoreError) -> EntryLock? {
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else { throw StoreError.io(path: path, operation: "open", reason: errnoText()) }
        while true {
            if flock(descriptor, LOCK_EX | LOCK_NB) == 0 { return EntryLock(path: path, descriptor: descriptor) }
            let error = errno
            if error == EINTR { continue }
            close(descriptor)
            if error == EWOULDBLOCK { return nil }
            throw StoreError.io(path: path, operation: "flock", reason: String(cString: strerror(error)))
        }
    }

    /// Waits for the lock at most `timeout` seconds, for callers with nothing else to do
    /// meanwhile (`oauth-relay token`, tests). It polls every 10 ms: `flock` has no timeout,
    /// and a signal-interrupted blocking `flock` would need a process-wide alarm.
    public static func acquire(path: String, timeout: Double) throws(StoreError) -> EntryLock {
        var waited = 0.0
        while true {
            if let lock = try tryAcquire(path: path) { return lock }
            guard waited < timeout else { throw StoreError.lockTimedOut(path: path, seconds: timeout) }
            usleep(10_000)
            waited += 0.01
        }
    }

    /// Releases the lock (closing the file releases it). Effective once.
    public func release() {
        guard descriptor >= 0 else { return }
        close(descriptor)
        descriptor = -1
    }

    public var isHeld: Bool { descriptor >= 0 }
}

func errnoText() -> String {
    String(cString: strerror(errno))
}
