// RelayServer: starts one ProxyWorker per worker thread and stops them.
//
// Each worker binds its own listening socket to the same address with SO_REUSEPORT, so the
// kernel balances connections and no lock is shared between workers on the request path.
// `reload` publishes new settings to all of them at once.

import Config
import EventLoop
import Logging
import RelayMetrics
import Synchronization

public final class RelayServer: Sendable {
    public enum StartError: Error, CustomStringConvertible {
        case badListenAddress(String)
        case bindFailed(String, UVError)

        public var description: String {
            switch self {
            case .badListenAddress(let text): return "listen address \(text) is not an IP address"
            case .bindFailed(let address, let error): return "cannot listen on \(address): \(error.message) (\(error.name))"
            }
        }
    }

    private struct Worker: Sendable {
        let thread: WorkerThread
        let stop: LoopWakeup
    }

    private let workers: [Worker]
    private let mailbox: SettingsMailbox
    private let stopRequested = Atomic<Bool>(false)
    /// The address actually bound (differs from the config with port 0).
    public let boundAddress: String
    /// The TLS listener's bound address, when there is one.
    public let boundTLSAddress: String?
    /// The forward-proxy listener's bound address, when there is one.
    public let boundForwardAddress: String?

    /// Binds and starts `count` workers; returns once all listen, or throws if any could not.
    /// `metrics`: where the workers count requests (nil: not counted).
    public static func start(settings: ProxySettings, workers count: Int, logger: Logger,
                             metrics: RelayMetrics? = nil) throws(StartError) -> RelayServer {
        let mailbox = SettingsMailbox(settings)
        let budget = ConnectionBudget()
        let listen = settings.config.listen
        guard var address = SocketAddress(binding: listen) else {
            throw .badListenAddress(listen.description)
        }
        var tlsAddress: SocketAddress? = nil
        if let tlsListen = settings.config.listenTls {
            guard let parsed = SocketAddress(binding: tlsListen.address) else {
                throw .badListenAddress(tlsListen.address.description)
            }
            tlsAddress = parsed
        }
        var forwardAddress: SocketAddress? = nil
        if let forward = settings.config.forward {
            guard let parsed = SocketAddress(binding: forward.address) else {
                throw .badListenAddress(forward.address.description)
            }
            forwardAddress = parsed
        }
        var started: [Worker] = []
        var bound = address.description
        var boundTLS = tlsAddress?.description
        var boundForward = forwardAddress?.description
        for index in 0..<count {
            let bindTo = address
            let bindTLSTo = tlsAddress
            let bindForwardTo = forwardAddress
            var workerLogger = logger
            workerLogger[metadataKey: "worker"] = "\(index)"
            let finalLogger = workerLogger
            let (thread, outcome) = WorkerThread.start { (report: (Result<(LoopWakeup, [SocketAddress?]), any Error>) -> Void) in
                let loop: EventLoop
                let worker: ProxyWorker
                do {
                    loop = try EventLoop()
                    worker = try ProxyWorker(loop: loop, mailbox: mailbox, budget: budget, address: bindTo, tlsAddress: bindTLSTo,
                                             forwardAddress: bindForwardTo, logger: finalLogger, metrics: metrics?.worker(index))
                } catch {
                    report(.failure(error))
                    return
                }
                report(.success((worker.stopSignal, [worker.boundAddress, worker.boundTLSAddress, worker.boundForwardAddress])))
                loop.run()
                do {
                    try loop.close()
                } catch {
                    finalLogger.error("worker loop closed with handles still open", metadata: ["error": "\(error)"])
                }
                _ = worker
            }
            switch outcome {
            case .success(let (wakeup, addresses)):
                let (boundAddress, boundTLSAddress, boundForwardAddress) = (addresses[0], addresses[1], addresses[2])
                started.append(Worker(thread: thread, stop: wakeup))
                // Port 0 picks a port for the first worker; the others join that one.
                if index == 0, let boundAddress {
                    address = boundAddress
                    bound = boundAddress.description
                }
                if index == 0, let boundTLSAddress {
                    tlsAddress = boundTLSAddress
                    boundTLS = boundTLSAddress.description
                }
                if index == 0, let boundForwardAddress {
                    forwardAddress = boundForwardAddress
                    boundForward = boundForwardAddress.description
                }
            case .failure(let error):
                thread.join()
                for worker in started { worker.stop.wake() }
                for worker in started { worker.thread.join() }
                if let failure = error as? ProxyWorker.BindFailure { throw .bindFailed(failure.address.description, failure.error) }
                throw .bindFailed(address.description, error as! UVError)
            }
        }
        return RelayServer(workers: started, mailbox: mailbox, boundAddress: bound, boundTLSAddress: boundTLS,
                           boundForwardAddress: boundForward)
    }

    private init(workers: [Worker], mailbox: SettingsMailbox, boundAddress: String, boundTLSAddress: String?,
                 boundForwardAddress: String?) {
        self.workers = workers
        self.mailbox = mailbox
        self.boundAddress = boundAddress
        self.boundTLSAddress = boundTLSAddress
        self.boundForwardAddress = boundForwardAddress
    }

    /// Puts `settings` in force: every request whose head arrives after this returns uses them;
    /// requests under way finish with the settings they began with, and connections stay open.
    /// The listen addresses and the worker count are those the server started with.
    public func reload(_ settings: ProxySettings) {
        mailbox.publish(settings)
    }

    /// The settings in force (a reload's, once it returned).
    public var settings: ProxySettings { mailbox.current.0 }

    /// Asks every worker to drain and stop; safe from any thread, effective once.
    public func stop() {
        guard !stopRequested.exchange(true, ordering: .acquiringAndReleasing) else { return }
        for worker in workers { worker.stop.wake() }
    }

    /// Blocks until every worker has stopped.
    public func wait() {
        for worker in workers { worker.thread.join() }
    }
}

extension SocketAddress {
    /// The address to bind for a configured `host:port` (listeners take IP literals;
    /// `localhost` means 127.0.0.1).
    public init?(binding hostPort: HostPort) {
        self.init(ip: hostPort.host == "localhost" ? "127.0.0.1" : hostPort.host, port: hostPort.port)
    }
}
