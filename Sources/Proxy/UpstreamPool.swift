import EventLoop
import HTTPClient
import TLS

/// The connections of one worker to one upstream `host:port`: idle ones kept for reuse (most
/// recently used first, so the least used age out on their idle timer), and the upstream's
/// addresses cached for `dnsCacheSeconds`.
///
/// At most `maxUpstreamConnections` connections are open (busy, idle or connecting); an
/// exchange that needs one more queues, first come first served, until a busy connection ends
/// its exchange (the queued exchange takes over its socket) or one closes (it opens a new one),
/// or until `upstreamQueueTimeoutSeconds` passes (503).
///
/// After a reload the worker retires its pools: idle connections close, busy ones close when
/// their exchange ends, and the worker lets go of the pool with its last connection.
final class UpstreamPool: UpstreamConnectionPool {
    let key: UpstreamKey
    let loop: EventLoop
    /// `unowned(unsafe)`: the worker outlives its pools (it holds each, in `pools` or
    /// `retiredPools`, until the pool's last connection closed); see ClientConnection.worker.
    unowned(unsafe) let worker: ProxyWorker
    let settings: ProxySettings
    private var idle: [UpstreamConnection] = []
    private var addresses: [SocketAddress] = []
    private var addressesExpireAt: UInt64 = 0
    private var nextAddress = 0
    private var waitingForAddresses: [UpstreamConnection] = []
    private var resolving = false
    private let maxIdle: Int
    private var retired = false
    /// Connections of this pool not closed yet (busy, idle or connecting).
    private var openConnections = 0
    private let maxOpenConnections: Int
    /// Exchanges waiting for a connection slot, oldest first; they hold no socket yet.
    private var queued: [UpstreamConnection] = []

    /// For an https upstream: how to connect (SNI and checked name: the URL's host unless the
    /// settings name another).
    let tls: TLSConfiguration?
    /// How its connections time each step (from the settings the pool was made with).
    private let deadlinePolicy: UpstreamDeadlines.Policy

    init(key: UpstreamKey, worker: ProxyWorker, settings: ProxySettings, tls: TLSConfiguration?) {
        self.key = key
        self.tls = tls
        self.worker = worker
        loop = worker.loop
        self.settings = settings
        maxIdle = settings.maxIdleUpstreamConnections
        maxOpenConnections = settings.maxUpstreamConnections
        deadlinePolicy = .pooled(connect: settings.connectTimeoutMilliseconds, response: settings.responseTimeoutMilliseconds,
                                 idle: settings.idleTimeoutMilliseconds, queue: settings.upstreamQueueTimeoutMilliseconds,
                                 responseTotal: settings.responseTotalMilliseconds)
        if let literal = SocketAddress(ip: key.host, port: key.port) {
            addresses = [literal]
            addressesExpireAt = .max
        }
    }

    /// A connection for `owner`'s exchange: an idle one, or a new one (connecting, or waiting
    /// for the host name to resolve). Never nil: failures arrive later through the owner.
    func acquire(for owner: any UpstreamExchangeOwner, fresh: Bool = false) -> UpstreamConnection {
        if !fresh, let connection = idle.popLast() {
            connection.begin(for: owner)
            return connection
        }
        // A fresh connection is wanted while idle ones fill the slots: the oldest gives way.
        if openConnections >= maxOpenConnections, !idle.isEmpty { idle.removeFirst().close() }
        let connection = UpstreamConnection(loop: loop, host: key.host, tls: tls, headerLimits: settings.responseHeaderLimits,
                                            deadlinePolicy: deadlinePolicy, pool: self)
        connection.begin(for: owner)
        if openConnections >= maxOpenConnections {
            connection.enterQueue()
            queued.append(connection)
            worker.metrics?.upstreamExchangeQueued()
        } else {
            open(connection)
        }
        return connection
    }

    /// Takes a slot for `connection` and connects it (once the host name is resolved).
    private func open(_ connection: UpstreamConnection) {
        openConnections += 1
        worker.metrics?.upstreamConnectionOpened()
        if loop.nowMilliseconds < addressesExpireAt, !addresses.isEmpty {
            connection.connect(to: pickAddress())
        } else {
            waitingForAddresses.append(connection)
            resolve()
        }
    }

    /// A queued exchange ended before it got a slot (its client left, or it timed out).
    func leaveQueue(_ connection: UpstreamConnection) {
        if let index = queued.firstIndex(where: { $0 === connection }) {
            queued.remove(at: index)
            worker.metrics?.upstreamExchangeDequeued()
        }
        if retired && isEmpty { worker.retiredPoolEmptied(self) }
    }

    /// Round-robin over the resolved addresses.
    private func pickAddress() -> SocketAddress {
        nextAddress = (nextAddress + 1) % addresses.count
        return addresses[nextAddress]
    }

    private func resolve() {
        guard !resolving else { return }
        resolving = true
        Resolver.resolve(on: loop, host: key.host, port: key.port) { [self] result in
            resolving = false
            let waiting = waitingForAddresses
            waitingForAddresses.removeAll()
            switch result {
            case .success(let resolved):
                addresses = resolved
                addressesExpireAt = loop.nowMilliseconds + settings.dnsCacheMilliseconds
                for connection in waiting { connection.connect(to: pickAddress()) }
            case .failure(let error):
                for connection in waiting {
                    let owner = connection.owner
                    connection.close()
                    owner?.upstream(connection, didFail: .resolve("cannot resolve upstream host \(key.host): \(error.name)"))
                }
            }
        }
    }

    /// A connection of this pool closed (it no longer uses the pool).
    func connectionClosed() {
        openConnections -= 1
        worker.metrics?.upstreamConnectionClosed()
        // The slot goes to the exchange that has queued longest.
        if openConnections < maxOpenConnections, !queued.isEmpty {
            let next = queued.removeFirst()
            worker.metrics?.upstreamExchangeDequeued()
            next.leaveQueue()
            open(next)
        }
        if retired && isEmpty { worker.retiredPoolEmptied(self) }
    }

    var isEmpty: Bool { openConnections == 0 && queued.isEmpty }

    /// Takes no more connections back: idle ones close now, busy ones when their exchange ends.
    func retire() {
        retired = true
        closeIdle()
    }

    /// Keeps a connection whose exchange ended cleanly, unless the pool is full or retired.
    func park(_ connection: UpstreamConnection) {
        if !queued.isEmpty {
            worker.metrics?.upstreamExchangeDequeued()
            queued.removeFirst().takeOver(connection)
            return
        }
        if retired {
            connection.close()
            return
        }
        if idle.count >= maxIdle {
            idle.removeFirst().close()
            worker.burstMemory.poolFreed()
        }
        idle.append(connection)
    }

    /// Forgets an idle connection that closed.
    func unpark(_ connection: UpstreamConnection) {
        if let index = idle.firstIndex(where: { $0 === connection }) { idle.remove(at: index) }
    }

    func closeIdle() {
        let connections = idle
        idle.removeAll()
        for connection in connections { connection.close() }
    }
}
