import EventLoop
import TLS

/// The connections of one worker to one upstream `host:port`: idle ones kept for reuse (most
/// recently used first, so the least used age out on their idle timer), and the upstream's
/// addresses cached for `dnsCacheSeconds`.
///
/// After a reload the worker retires its pools: idle connections close, busy ones close when
/// their exchange ends, and the worker lets go of the pool with its last connection.
final class UpstreamPool {
    let key: UpstreamKey
    let loop: EventLoop
    unowned let worker: ProxyWorker
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

    /// For an https upstream: how to connect (SNI and checked name: the URL's host unless the
    /// settings name another).
    let tls: TLSConfiguration?

    init(key: UpstreamKey, worker: ProxyWorker, settings: ProxySettings, tls: TLSConfiguration?) {
        self.key = key
        self.tls = tls
        self.worker = worker
        loop = worker.loop
        self.settings = settings
        maxIdle = settings.config.limits.maxIdleUpstreamConnections
        if let literal = SocketAddress(ip: key.host, port: key.port) {
            addresses = [literal]
            addressesExpireAt = .max
        }
    }

    /// A connection for `owner`'s exchange: an idle one, or a new one (connecting, or waiting
    /// for the host name to resolve). Never nil: failures arrive later through the owner.
    func acquire(for owner: ClientConnection, fresh: Bool = false) -> UpstreamConnection {
        if !fresh, let connection = idle.popLast() {
            connection.begin(for: owner)
            return connection
        }
        let connection = UpstreamConnection(pool: self)
        openConnections += 1
        worker.metrics?.upstreamConnectionOpened()
        connection.begin(for: owner)
        if loop.nowMilliseconds < addressesExpireAt, !addresses.isEmpty {
            connection.connect(to: pickAddress())
        } else {
            waitingForAddresses.append(connection)
            resolve()
        }
        return connection
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
        if retired && openConnections == 0 { worker.retiredPoolEmptied(self) }
    }

    var isEmpty: Bool { openConnections == 0 }

    /// Takes no more connections back: idle ones close now, busy ones when their exchange ends.
    func retire() {
        retired = true
        closeIdle()
    }

    /// Keeps a connection whose exchange ended cleanly, unless the pool is full or retired.
    func park(_ connection: UpstreamConnection) {
        if retired {
            connection.close()
            return
        }
        if idle.count >= maxIdle {
            idle.removeFirst().close()
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
