// Locking: the one lock type of the relay's shared state.
//
// Why not `Synchronization.Mutex`: on Linux it locks with raw futex system calls, which
// ThreadSanitizer cannot see, so every access it protects is reported as a race and a sanitizer
// run of the relay says nothing useful. A pthread mutex is intercepted by ThreadSanitizer (and
// costs the same uncontended), so `make test-tsan` checks the real locking discipline.

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A value that is only ever read or changed with its lock held (`withLock`).
///
/// `@unchecked Sendable`: `value` is reachable only inside `withLock`, which holds `mutex` for
/// the whole access, so no two threads ever touch it at once; the mutex itself is allocated
/// once, never moved, and destroyed only in `deinit`, when no thread can hold a reference.
public final class Locked<Value: Sendable>: @unchecked Sendable {
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>
    @usableFromInline var value: Value

    public init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` with the lock held. Do not lock another `Locked` inside unless every thread
    /// takes the two in the same order.
    @inlinable
    public func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
