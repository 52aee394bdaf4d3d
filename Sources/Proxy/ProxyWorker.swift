// ProxyWorker: everything one worker thread owns — its loop, its SO_REUSEPORT listener, its
// client connections and its upstream pools. Nothing here is shared with other workers except
// the immutable `ProxySettings`; a connection never leaves its worker.

import EventLoop
import Logging
import Config
import Synchronization
import TLSStream

final class ProxyWorker {
    let loop: EventLoop
    let settings: ProxySettings
    let logger: Logger
    private var listener: TCPListener?
    private var clients: [ObjectIdentifier: ClientConnection] = [:]
    private var pools: [UpstreamKey: UpstreamPool] = [:]
    private var poolByRoute: [UpstreamPool?]
    private(set) var isDraining = false
    /// This worker's side of the identities' tokens (nil without identities).
    private(set) var tokens: WorkerTokens?
    private var stopWakeup: LoopWakeup?
    private var graceTimer: LoopTimer?
    private let startNanoseconds = EventLoop.monotonicNanoseconds()

    private var tlsListener: TCPListener?

    init(loop: EventLoop, settings: ProxySettings, address: SocketAddress, tlsAddress: SocketAddress?,
         logger: Logger) throws(UVError) {
        self.loop = loop
        self.settings = settings
        self.logger = logger
        poolByRoute = Array(repeating: nil, count: settings.plans.count)
        listener = try TCPListener(loop: loop, address: address, reusePort: true) { [unowned self] stream in
            self.accept(stream)
        }
        if let tlsAddress, let serverTLS = settings.listenerTLS {
            do throws(UVError) {
                tlsListener = try TCPListener(loop: loop, address: tlsAddress, reusePort: true) { [unowned self] tcp in
                    self.accept(TLSStream.accept(tcp, configuration: serverTLS), overTLS: true)
                }
            } catch {
                listener?.close()
                throw error
            }
        }
        stopWakeup = LoopWakeup(loop: loop) { [unowned self] in self.beginDrain() }
        tokens = settings.tokens.map { WorkerTokens(service: $0, loop: loop) }
    }

    /// For waking this worker from another thread to stop it.
    var stopSignal: LoopWakeup { stopWakeup! }

    var boundAddress: SocketAddress? { listener?.localAddress }
    var boundTLSAddress: SocketAddress? { tlsListener?.localAddress }

    private func accept(_ stream: any ByteStream, overTLS: Bool = false) {
        let connection = ClientConnection(worker: self, stream: stream, overTLS: overTLS)
        clients[ObjectIdentifier(connection)] = connection
    }

    func connectionDidClose(_ connection: ClientConnection) {
        clients.removeValue(forKey: ObjectIdentifier(connection))
        if isDraining && clients.isEmpty { finishDrain() }
    }

    /// The pool of a route's upstream. Routes to the same upstream share one pool; the lookup
    /// per request is an array index, not a hash of the host name.
    func pool(for plan: RoutePlan) -> UpstreamPool {
        if let pool = poolByRoute[plan.position] { return pool }
        let pool = pools[plan.upstreamKey] ?? UpstreamPool(key: plan.upstreamKey, loop: loop, settings: settings, tls: plan.tls)
        pools[plan.upstreamKey] = pool
        poolByRoute[plan.position] = pool
        return pool
    }

    /// Nanoseconds since the worker started (monotonic), for timing exchanges.
    func clock() -> UInt64 { EventLoop.monotonicNanoseconds() - startNanoseconds + 1 }

    // MARK: Stopping

    /// Stops accepting; idle connections close now, busy ones after their exchange, and all of
    /// them after `shutdownGraceSeconds` at the latest.
    private func beginDrain() {
        guard !isDraining else { return }
        isDraining = true
        listener?.close()
        listener = nil
        tlsListener?.close()
        tlsListener = nil
        for pool in pools.values { pool.closeIdle() }
        for connection in Array(clients.values) { connection.drain() }
        if clients.isEmpty {
            finishDrain()
            return
        }
        graceTimer = LoopTimer(loop: loop) { [unowned self] in
            self.logger.warning("shutdown grace period over; closing busy connections", metadata: ["connections": "\(self.clients.count)"])
            for connection in Array(self.clients.values) { connection.close() }
        }
        graceTimer?.start(afterMilliseconds: settings.shutdownGraceMilliseconds)
    }

    /// Closes the worker's own handles so its loop runs out of work and `run()` returns.
    private func finishDrain() {
        graceTimer?.close()
        graceTimer = nil
        for pool in pools.values { pool.closeIdle() }
        tokens?.close()
        stopWakeup?.close()
    }

    // MARK: Logging

    func logAccess(_ exchange: ClientConnection.Exchange) {
        let now = clock()
        var metadata: Logger.Metadata = [
            "method": .string(exchange.method),
            "path": .string(exchange.path),
            "route": .string(exchange.routeName.isEmpty ? "-" : exchange.routeName),
            "status": .stringConvertible(exchange.status),
            "bytes": .stringConvertible(exchange.bodyBytesSent),
            "duration_ms": .string(Self.milliseconds(now - exchange.startedAt)),
        ]
        if exchange.upstreamHeadAt > exchange.upstreamStartedAt && exchange.upstreamStartedAt > 0 {
            metadata["upstream_ms"] = .string(Self.milliseconds(exchange.upstreamHeadAt - exchange.upstreamStartedAt))
        }
        logger.info("access", metadata: metadata)
    }

    func logUpstreamFailure(_ failure: UpstreamFailure, route: String?, midResponse: Bool) {
        logger.warning("upstream failure", metadata: [
            "route": .string(route ?? "-"),
            "error": .string("\(failure)"),
            "mid_response": .stringConvertible(midResponse),
        ])
    }

    private static func milliseconds(_ nanoseconds: UInt64) -> String {
        let tenths = nanoseconds / 100_000
        return "\(tenths / 10).\(tenths % 10)"
    }
}
