#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// The client connections of the whole process, counted across its workers, so that
/// `limits.maxConnections` holds for the process and not per worker. A connection over the
/// limit is closed as soon as it is accepted: the listener keeps draining its backlog and the
/// descriptors the relay needs for upstreams and token endpoints stay free.
public final class ConnectionBudget: Sendable {
    private let open = Atomic<Int>(0)

    public init() {}

    /// Counts a new connection if fewer than `limit` are open; false when it must be refused.
    func take(limit: Int) -> Bool {
        if open.add(1, ordering: .relaxed).newValue <= limit { return true }
        open.subtract(1, ordering: .relaxed)
        return false
    }

    func release() {
        open.subtract(1, ordering: .relaxed)
    }

    /// The default `maxConnections`: half the descriptors this process may open (each client
    /// may hold an upstream connection), less a reserve for listeners, token endpoints and the
    /// admin listener; at least 16.
    public static func defaultLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur != rlim_t.max else { return 65_536 }
        return max(16, (Int(clamping: limit.rlim_cur) - 64) / 2)
    }
}
