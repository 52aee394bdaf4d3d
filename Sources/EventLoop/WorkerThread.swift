import Dispatch
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An OS thread that runs one closure (a worker's loop) and can be joined.
public final class WorkerThread: @unchecked Sendable {
    private var thread = pthread_t()

    private final class Body {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }

    /// `@unchecked Sendable`: `thread` is written once here, before any other thread sees `self`.
    public init(_ body: @escaping @Sendable () -> Void) {
        let box = Unmanaged.passRetained(Body(body)).toOpaque()
        let rc = pthread_create(&thread, nil, { argument in
            let body = Unmanaged<Body>.fromOpaque(argument!).takeRetainedValue()
            body.run()
            return nil
        }, box)
        precondition(rc == 0, "pthread_create failed: \(rc)")
    }

    public func join() {
        pthread_join(thread, nil)
    }

    /// Online cores, for `workers: 0`.
    public static var processorCount: Int { max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) }
}

extension WorkerThread {
    /// Starts a thread that sets itself up, reports how that went, and then goes on — a worker
    /// that binds its listeners before it runs its loop. Returns once the thread has reported.
    /// `body` must call `report` exactly once, before anything long; after reporting a
    /// failure it should return, and the caller joins the thread.
    public static func start<Value: Sendable>(
        _ body: @escaping @Sendable (_ report: (Result<Value, any Error>) -> Void) -> Void
    ) -> (thread: WorkerThread, outcome: Result<Value, any Error>) {
        let outcome = StartOutcome<Value>()
        let ready = DispatchSemaphore(value: 0)
        let thread = WorkerThread {
            body { result in
                outcome.value = result
                ready.signal()
            }
        }
        ready.wait()
        return (thread, outcome.value!)
    }
}

/// Written by the starting thread before it signals, read by the starter after the wait.
private final class StartOutcome<Value>: @unchecked Sendable {
    var value: Result<Value, any Error>?
}
