// ProxyWorker: everything one worker thread owns — its loop, its SO_REUSEPORT listener, its
// client connections, its upstream pools and its metrics. Nothing here is shared with other
// workers except the immutable `ProxySettings`; a connection never leaves its worker.
//
// A reload publishes new settings in the server's `SettingsMailbox`. Each request head asks
// for `currentSettings`, which adopts them on first sight (one atomic load otherwise): the
// worker's upstream pools are retired (their busy connections finish, then close; new
// exchanges get new pools) and requests already under way keep the settings they began with.

import BrowserSafety
import EventLoop
import Logging
import Config
import RelayMetrics
import Synchronization
import TLSStream

final class ProxyWorker {
    let loop: EventLoop
    private(set) var settings: ProxySettings
    private let mailbox: SettingsMailbox
    /// Shared by every worker of the process (`limits.maxConnections`).
    private let budget: ConnectionBudget
    private var adoptedGeneration: UInt64
    let logger: Logger
    /// This worker's series; nil when metrics are off (no admin listener).
    let metrics: WorkerMetrics?
    /// Route series of the current settings, by route position.
    private var routeMetrics: [RouteMetrics?]
    private var listener: TCPListener?
    private var clients: [ObjectIdentifier: ClientConnection] = [:]
    /// Parsers and buffers lent to client connections while they have a request under way.
    let workspaces = WorkspacePool()
    /// Gives back what a burst of requests left (spare workspaces, buffers, free heap pages) once
    /// it is over; the pools report what they free beyond their bounds.
    let burstMemory: BurstMemoryReturn
    /// Takes back the workspaces of connections that went idle (WorkspaceSweep.swift).
    let workspaceSweep: WorkspaceSweep
    /// The text of the last client address seen, shared by the connections from it.
    private var lastClientAddress: [UInt8] = []
    private var pools: [UpstreamKey: UpstreamPool] = [:]
    private var poolByRoute: [UpstreamPool?]
    /// Pools of earlier settings, kept until their last connection closes.
    private var retiredPools: [ObjectIdentifier: UpstreamPool] = [:]
    private(set) var isDraining = false
    /// This worker's side of the identities' tokens (nil without identities).
    private(set) var tokens: WorkerTokens?
    private var stopWakeup: LoopWakeup?
    private var graceTimer: LoopTimer?
    private let startNanoseconds = EventLoop.monotonicNanoseconds()

    private var tlsListener: TCPListener?
    /// The forward-proxy listener (`forward.listen`), and the tunnels its `CONNECT`s opened.
    private var forwardListener: TCPListener?
    private var tunnels: [ObjectIdentifier: ConnectTunnel] = [:]
    /// The tunnels' name lookups: a few at once, the rest in line, answers cached.
    private(set) lazy var tunnelResolver = TunnelResolver(loop: loop)

    /// A listener of the worker could not be bound: `address` names which.
    struct BindFailure: Error {
        let address: SocketAddress
        let error: UVError
    }

    init(loop: EventLoop, mailbox: SettingsMailbox, budget: ConnectionBudget, address: SocketAddress,
         tlsAddress: SocketAddress?, forwardAddress: SocketAddress? = nil, logger: Logger, metrics: WorkerMetrics?) throws(BindFailure) {
        self.loop = loop
        self.mailbox = mailbox
        self.budget = budget
        (settings, adoptedGeneration) = mailbox.current
        self.logger = logger
        self.metrics = metrics
        burstMemory = BurstMemoryReturn(loop: loop, logger: logger, workspaces: workspaces)
        workspaceSweep = WorkspaceSweep(loop: loop)
        poolByRoute = Array(repeating: nil, count: settings.plans.count)
        routeMetrics = Array(repeating: nil, count: settings.plans.count)
        do throws(UVError) {
            listener = try TCPListener(loop: loop, address: address, reusePort: true) { [unowned self] stream in
                guard self.admit() else { return stream.close() }
                self.accept(stream)
            }
        } catch {
            throw BindFailure(address: address, error: error)
        }
        if let tlsAddress, settings.listenerTLS != nil {
            do throws(UVError) {
                tlsListener = try TCPListener(loop: loop, address: tlsAddress, reusePort: true) { [unowned self] tcp in
                    // The certificate of the settings in force (a reload may have rotated it).
                    guard let serverTLS = self.currentSettings.listenerTLS, self.admit() else { return tcp.close() }
                    self.accept(TLSStream.accept(tcp, configuration: serverTLS), overTLS: true)
                }
            } catch {
                listener?.close()
                throw BindFailure(address: tlsAddress, error: error)
            }
        }
        if let forwardAddress, settings.forward != nil {
            do throws(UVError) {
                forwardListener = try TCPListener(loop: loop, address: forwardAddress, reusePort: true) { [unowned self] tcp in
                    guard self.admit() else { return tcp.close() }
                    self.accept(tcp, forwardRole: .listener)
                }
            } catch {
                listener?.close()
                tlsListener?.close()
                throw BindFailure(address: forwardAddress, error: error)
            }
        }
        stopWakeup = LoopWakeup(loop: loop) { [unowned self] in self.beginDrain() }
        // Unowned: the sweep, which keeps this closure, is the worker's own.
        workspaceSweep.whenDue { [unowned self] in self.sweepWorkspaces() }
        tokens = settings.tokens.map { WorkerTokens(service: $0, loop: loop) }
    }

    /// For waking this worker from another thread to stop it.
    var stopSignal: LoopWakeup { stopWakeup! }

    var boundAddress: SocketAddress? { listener?.localAddress }
    var boundTLSAddress: SocketAddress? { tlsListener?.localAddress }
    var boundForwardAddress: SocketAddress? { forwardListener?.localAddress }

    /// Whether a new client connection fits `limits.maxConnections` (then it is counted).
    private func admit() -> Bool {
        if budget.take(limit: currentSettings.maxConnections) { return true }
        refusedConnections += 1
        let now = loop.nowMilliseconds
        if now >= nextRefusalLog {
            // At most one line a minute per worker, however fast connections are refused.
            logger.warning("limits.maxConnections reached; closing new connections",
                           metadata: ["limit": "\(currentSettings.maxConnections)", "refused": "\(refusedConnections)"])
            nextRefusalLog = now + 60_000
        }
        return false
    }

    private var refusedConnections = 0
    private var nextRefusalLog: UInt64 = 0

    private func accept(_ stream: any ByteStream, overTLS: Bool = false, forwardRole: ForwardSide.Role? = nil) {
        let connection = ClientConnection(worker: self, stream: stream, overTLS: overTLS, forwardRole: forwardRole)
        clients[ObjectIdentifier(connection)] = connection
        metrics?.clientConnectionOpened()
    }

    /// A client address as text, for X-Forwarded-For: the same array as the last connection's
    /// when it is the same address (a sidecar's clients are all 127.0.0.1), so that a connection
    /// holds no copy of its own.
    func sharedClientAddress(_ text: [UInt8]) -> [UInt8] {
        if text == lastClientAddress { return lastClientAddress }
        lastClientAddress = text
        return text
    }

    /// A pass of `workspaceSweep` over the client connections.
    func sweepWorkspaces() {
        for connection in clients.values { connection.sweepWorkspace() }
    }

    func connectionDidClose(_ connection: ClientConnection) {
        clients.removeValue(forKey: ObjectIdentifier(connection))
        budget.release()
        metrics?.clientConnectionClosed()
        if isDraining && clients.isEmpty && tunnels.isEmpty { finishDrain() }
    }

    // MARK: The forward proxy's CONNECTs

    /// A connection handed its socket to a tunnel or to TLS (ClientConnection+Forward.swift):
    /// forgotten, its place in the budget and the metrics kept for what took the socket.
    func connectionHandedOff(_ connection: ClientConnection) {
        clients.removeValue(forKey: ObjectIdentifier(connection))
    }

    /// A tunnel for a `CONNECT` taken; while the worker drains it is refused at once (503).
    func openTunnel(client: TCPStream, to target: ForwardPlacement.ConnectTarget, pipelined: [UInt8]) {
        let tunnel = ConnectTunnel(worker: self, client: client, target: target, pipelined: pipelined, settings: currentSettings)
        tunnels[ObjectIdentifier(tunnel)] = tunnel
        if isDraining { tunnel.drain() }
    }

    /// The TLS of an intercepted `CONNECT`: its requests are a client connection's, for the
    /// `CONNECT`'s host only. While the worker drains, the connection closes at once (it is
    /// idle: no request read yet).
    func acceptIntercepted(_ stream: TLSStream, target: ForwardPlacement.ConnectTarget) {
        let connection = ClientConnection(worker: self, stream: stream, overTLS: true, forwardRole: .intercepting(target))
        clients[ObjectIdentifier(connection)] = connection
        if isDraining { connection.drain() }
    }

    func tunnelDidClose(_ tunnel: ConnectTunnel) {
        tunnels.removeValue(forKey: ObjectIdentifier(tunnel))
        budget.release()
        metrics?.clientConnectionClosed()
        if isDraining && clients.isEmpty && tunnels.isEmpty { finishDrain() }
    }

    // MARK: Settings and reloads

    /// The settings for a request that starts now: the newest a reload published.
    var currentSettings: ProxySettings {
        if mailbox.generation != adoptedGeneration { adoptNewSettings() }
        return settings
    }

    /// Whether `connection` holds the settings a request that starts now takes (`currentSettings`),
    /// compared without taking either reference: reading `currentSettings` to compare was a
    /// retain and a release per request.
    @inline(__always)
    func settingsAreCurrent(for connection: ClientConnection) -> Bool {
        if mailbox.generation != adoptedGeneration { adoptNewSettings() }
        return settings === connection.settings
    }

    private func adoptNewSettings() {
        (settings, adoptedGeneration) = mailbox.current
        // New routes may name other upstreams, TLS settings or limits: new exchanges get new
        // pools, and the old ones close as their exchanges end.
        for pool in pools.values { retire(pool) }
        pools.removeAll()
        poolByRoute = Array(repeating: nil, count: settings.plans.count)
        routeMetrics = Array(repeating: nil, count: settings.plans.count)
        if let tokens, let identities = settings.identities { tokens.keepOnly(identities) }
    }

    private func retire(_ pool: UpstreamPool) {
        pool.retire()
        if !pool.isEmpty { retiredPools[ObjectIdentifier(pool)] = pool }
    }

    /// A retired pool's last connection closed.
    func retiredPoolEmptied(_ pool: UpstreamPool) {
        retiredPools.removeValue(forKey: ObjectIdentifier(pool))
    }

    /// The pool of a route's upstream. Routes to the same upstream share one pool; the lookup
    /// per request is an array index, not a hash of the host name. A plan of earlier settings
    /// (its request began before a reload) gets a pool of its own, retired from the start.
    /// `connection`: the client connection whose settings `plan` is of, its settings compared
    /// in place (passing the settings themselves was a retain and a release per request).
    func pool(for plan: RoutePlan, of connection: ClientConnection) -> UpstreamPool {
        guard connection.settings === settings else {
            let pool = UpstreamPool(key: plan.upstreamKey, worker: self, settings: connection.settings, tls: plan.tls)
            retiredPools[ObjectIdentifier(pool)] = pool
            pool.retire()
            return pool
        }
        if let pool = poolByRoute[plan.position] { return pool }
        let pool = pools[plan.upstreamKey] ?? UpstreamPool(key: plan.upstreamKey, worker: self, settings: settings, tls: plan.tls)
        pools[plan.upstreamKey] = pool
        poolByRoute[plan.position] = pool
        return pool
    }

    /// `pool(for:of:)` for one call, lent without a retain when the route's pool is at hand:
    /// `poolByRoute` changes only in `pool(for:of:)` and when a reload's settings are adopted (at
    /// a request's head), neither of which a pool's `acquire` reaches. That holds for
    /// `acquire(for:)` only, which takes an idle connection when there is one and so never closes
    /// one. `acquire(for:fresh: true)` may close an idle connection, whose slot may then start
    /// another client's queued exchange, which may adopt new settings and drop this pool: keep
    /// it off this path (`retryOnFreshConnection` holds its pool).
    @inline(__always)
    func withPool<Result>(for plan: RoutePlan, of connection: ClientConnection, _ body: (UpstreamPool) -> Result) -> Result {
        if connection.settings === settings, let pool = poolByRoute[plan.position].map(Unmanaged.passUnretained) {
            return pool._withUnsafeGuaranteedRef(body)
        }
        return body(pool(for: plan, of: connection))
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
        forwardListener?.close()
        forwardListener = nil
        for pool in pools.values { pool.closeIdle() }
        for connection in Array(clients.values) { connection.drain() }
        for tunnel in Array(tunnels.values) { tunnel.drain() }
        if clients.isEmpty && tunnels.isEmpty {
            finishDrain()
            return
        }
        graceTimer = LoopTimer(loop: loop) { [unowned self] in
            self.logger.warning("shutdown grace period over; closing busy connections",
                                metadata: ["connections": "\(self.clients.count)", "tunnels": "\(self.tunnels.count)"])
            for connection in Array(self.clients.values) { connection.close() }
            for tunnel in Array(self.tunnels.values) { tunnel.close() }
        }
        graceTimer?.start(afterMilliseconds: settings.shutdownGraceMilliseconds)
    }

    /// Closes the worker's own handles so its loop runs out of work and `run()` returns.
    private func finishDrain() {
        graceTimer?.close()
        graceTimer = nil
        burstMemory.close()
        workspaceSweep.close()
        for pool in pools.values { pool.closeIdle() }
        tokens?.close()
        stopWakeup?.close()
    }

    // MARK: Metrics and logging

    /// Counts and logs a finished exchange. `inout` only so that the caller's stored record is
    /// read in place, not copied: it is not changed here. `connection`: the client connection
    /// whose settings the exchange had, read in place as for `pool(for:of:)`.
    func record(_ exchange: inout ExchangeRecord, plan: RoutePlan?, of connection: ClientConnection) {
        let now = exchange.endedAt != 0 ? exchange.endedAt : clock()
        let upstreamTimed = exchange.upstreamHeadAt > exchange.upstreamStartedAt && exchange.upstreamStartedAt > 0
        // The metrics and the route's series lent without a retain: `metrics` is a `let`, and
        // counting changes none of this worker's series (only `routeMetrics` and a reload's
        // adoption of new settings do).
        if let metrics = metrics.map(Unmanaged.passUnretained) {
            let inForce = connection.settings === settings
            let seconds = Double(now - exchange.startedAt) / 1_000_000_000
            let upstreamSeconds = upstreamTimed ? Double(exchange.upstreamHeadAt - exchange.upstreamStartedAt) / 1_000_000_000 : nil
            let status = exchange.status
            let count = { (series: RouteMetrics) in
                series.countRequest(status: status, seconds: seconds)
                if let upstreamSeconds { series.recordUpstream(seconds: upstreamSeconds) }
            }
            if inForce, let position = plan?.position, let series = routeMetrics[position].map(Unmanaged.passUnretained) {
                series._withUnsafeGuaranteedRef(count)
            } else {
                metrics._withUnsafeGuaranteedRef { count(routeMetrics($0, plan, inForce: inForce)) }
            }
        }
        if connection.settings.accessLog { logAccess(exchange, now: now, upstreamTimed: upstreamTimed) }
    }

    /// Counts a request refused for what a browser could have been made to send (the request
    /// itself is counted and logged as every answered one is).
    func countRefused(_ refusal: BrowserRefusal) {
        metrics?.countRefused(reason: refusal.rawValue)
    }

    /// Counts a request rejected before it had a head worth timing (400, 431, 408).
    func countRejected(status: Int) {
        metrics?.route("").countRequest(status: status, seconds: nil)
    }

    /// The series of `plan`'s route (no plan: requests no route took). `inForce`: the plan is
    /// of the settings in force (its position indexes `routeMetrics`).
    private func routeMetrics(_ metrics: WorkerMetrics, _ plan: RoutePlan?, inForce: Bool) -> RouteMetrics {
        guard let plan else { return metrics.route("") }
        guard inForce else { return metrics.route(plan.route.name) }
        if let series = routeMetrics[plan.position] { return series }
        let series = metrics.route(plan.route.name)
        routeMetrics[plan.position] = series
        return series
    }

    private func logAccess(_ exchange: ExchangeRecord, now: UInt64, upstreamTimed: Bool) {
        var metadata: Logger.Metadata = [
            "method": .string(exchange.logged?.method ?? ""),
            "path": .string(exchange.logged?.path ?? ""),
            "route": .string(exchange.logged.map { $0.routeName.isEmpty ? "-" : $0.routeName } ?? "-"),
            "status": .stringConvertible(exchange.status),
            "bytes": .stringConvertible(exchange.bodyBytesSent),
            "duration_ms": .string(Self.milliseconds(now - exchange.startedAt)),
        ]
        if upstreamTimed {
            metadata["upstream_ms"] = .string(Self.milliseconds(exchange.upstreamHeadAt - exchange.upstreamStartedAt))
        }
        logger.info("access", metadata: metadata)
    }

    /// Counts and logs an upstream exchange that failed.
    func upstreamFailed(_ failure: UpstreamFailure, plan: RoutePlan?, settings: ProxySettings, midResponse: Bool) {
        if let metrics { routeMetrics(metrics, plan, inForce: settings === self.settings).countUpstreamError(kind: failure.metricKind) }
        logger.warning("upstream failure", metadata: [
            "route": .string(plan?.route.name ?? "-"),
            "error": .string("\(failure)"),
            "mid_response": .stringConvertible(midResponse),
        ])
    }

    private static func milliseconds(_ nanoseconds: UInt64) -> String {
        let tenths = nanoseconds / 100_000
        return "\(tenths / 10).\(tenths % 10)"
    }
}
