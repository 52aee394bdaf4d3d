// The token loop's link to the shared Redis store: two connections to one endpoint, one for
// commands and one subscribed to the entries' channel (RESP2 cannot mix the two), ready when
// both are. When either fails or a command times out, both close and the link reconnects after a
// backoff; RedisLinkHealth decides when, and when to log (once per outage). Runs on the token
// loop only, like everything in this module that talks to Redis. Against a Redis Cluster,
// ClusterCommands takes each command to its key's master, and the listener subscribes on the node
// that gave the slot map, once the map is in.
//
// With Sentinel (`redis-sentinel://`), each attempt first asks the sentinels where the master is
// (SentinelWatch), and the link is ready only once `ROLE` on the command connection says master:
// a stale sentinel's answer never has the relay write to a replica. A `+switch-master` for our
// master closes the link and opens it on the new master at once; a `READONLY` refusal (or an
// `UNBLOCKED` WAIT: the server was demoted) ends the link like a lost connection, so the
// sentinels are asked again.

import Endpoints
import EventLoop
import Logging
import RedisClient
import RedisProtocol
import TLS

final class RedisLink {
    let topology: RedisTopology
    /// Sentinel only: the master the sentinels named last, and what asks them.
    private var master: RedisEndpoint?
    private var sentinels: SentinelWatch?
    private let loop: EventLoop
    private let timeoutMilliseconds: UInt64
    private let tls: TLSConfiguration?
    private let channel: [UInt8]
    private let logger: Logger
    /// `store.passwordFile`: read again before each attempt.
    private let passwordFile: RedisPasswordFile?
    private(set) var health = RedisLinkHealth()
    private var commands: RedisConnection?
    private var cluster: ClusterCommands?
    private var listener: RedisConnection?
    /// Connections of the current attempt that are up.
    private var connectionsUp = 0
    private var retryTimer: LoopTimer?
    private var everReady = false
    private var stopped = false

    /// The link is up (both connections).
    var onReady: () -> Void = {}
    /// The link went down, or its first attempt failed.
    var onLost: () -> Void = {}
    /// A message on the entries' channel: the key of an entry written or whose lease was released.
    var onMessage: ([UInt8]) -> Void = { _ in }

    init(loop: EventLoop, topology: RedisTopology, timeoutMilliseconds: UInt64, tls: TLSConfiguration? = nil,
         channel: [UInt8], logger: Logger, passwordFile: RedisPasswordFile? = nil) {
        self.passwordFile = passwordFile
        self.loop = loop
        self.topology = topology
        self.timeoutMilliseconds = timeoutMilliseconds
        self.tls = tls
        self.channel = channel
        self.logger = logger
        if case .sentinel(let sentinel) = topology {
            sentinels = SentinelWatch(loop: loop, topology: sentinel, timeoutMilliseconds: timeoutMilliseconds, tls: tls, logger: logger,
                                      onSwitch: { [unowned self] in masterSwitched(to: $0) })
        }
    }

    /// Where the link is, for the log: the URL (redacted), and the master the sentinels named.
    private var place: Logger.Metadata {
        var metadata: Logger.Metadata = ["redis": .string(topology.description)]
        if let master { metadata["master"] = .string("\(HostSyntax.bracketed(master.host)):\(master.port)") }
        return metadata
    }

    var isReady: Bool { health.state == .ready }

    func start() {
        open()
    }

    private func open() {
        switch topology {
        case .server(let endpoint): connect(to: endpoint)
        case .cluster: openCluster()
        case .sentinel: findMaster()
        }
    }

    private func findMaster() {
        sentinels?.findMaster { [weak self] result in
            guard let self, !stopped else { return }
            switch result {
            case .success(let endpoint):
                master = endpoint
                connect(to: endpoint)
            case .failure(let noMaster):
                lost(.unreachable(noMaster.description))
            }
        }
    }

    private func connect(to endpoint: RedisEndpoint) {
        connectionsUp = 0
        let endpoint = passwordFile?.endpoint(endpoint, logger: logger) ?? endpoint
        commands = RedisConnection(loop: loop, endpoint: endpoint, timeoutMilliseconds: timeoutMilliseconds, tls: tls,
                                   onReady: { [weak self] in self?.connectionUp() },
                                   onEnded: { [weak self] in self?.connectionEnded($0) })
        listener = RedisConnection(loop: loop, endpoint: endpoint, timeoutMilliseconds: timeoutMilliseconds, tls: tls,
                                   subscribingTo: channel, onMessage: { [weak self] in self?.onMessage($0) },
                                   onReady: { [weak self] in self?.connectionUp() },
                                   onEnded: { [weak self] in self?.connectionEnded($0) })
    }

    /// A connection to the server (or the master the sentinels named) ended. One that never
    /// reached the master it was named: the next round asks another sentinel first.
    private func connectionEnded(_ failure: RedisConnection.Failure) {
        if case .unreachable = failure, !isReady { sentinels?.namedMasterUnusable() }
        lost(failure)
    }

    private func openCluster() {
        let topology = passwordFile?.topology(topology, logger: logger) ?? topology
        guard case .cluster(let seeds) = topology else { return }
        connectionsUp = 0
        cluster = ClusterCommands(loop: loop, seeds: seeds, timeoutMilliseconds: timeoutMilliseconds, tls: tls, onReady: { [weak self] in
            guard let self, let source = cluster?.mapSource else { return }
            connectionUp()
            listener = RedisConnection(loop: loop, endpoint: source, timeoutMilliseconds: timeoutMilliseconds, tls: tls,
                                       subscribingTo: channel, onMessage: { [weak self] in self?.onMessage($0) },
                                       onReady: { [weak self] in self?.connectionUp() },
                                       onEnded: { [weak self] in self?.lost($0) })
        }, onEnded: { [weak self] in self?.lost($0) })
    }

    private func connectionUp() {
        connectionsUp += 1
        guard connectionsUp == 2 else { return }
        guard sentinels != nil, let commands else { return becomeReady() }
        commands.send(ServerRole.command) { [weak self] result in
            guard let self, self.commands === commands else { return }
            switch result.map(ServerRole.init) {
            case .success(.master): becomeReady()
            case .success(.notMaster(let role)):
                // A stale sentinel's answer: the next round asks another first.
                sentinels?.namedMasterUnusable()
                lost(.refused("the sentinels named a server whose ROLE is \(role), not master"))
            case .success(.unreadable): lost(.refused("the server's answer to ROLE is not a role"))
            case .failure(let failure): lost(failure)
            }
        }
    }

    private func becomeReady() {
        let resumed = health.connected(at: monotonicSeconds())
        if !everReady {
            everReady = true
            logger.info("shared token store connected", metadata: place)
        } else if resumed {
            logger.info("shared token store reachable again; sharing tokens", metadata: place)
        }
        onReady()
    }

    private func lost(_ failure: RedisConnection.Failure) {
        guard !stopped else { return }
        closeConnections()
        let (begins, retryAfter) = health.lost(random: Double.random(in: 0..<1), at: monotonicSeconds())
        if begins {
            var metadata = place.merging(["error": .string(failure.description)]) { $1 }
            // A refused AUTH: the password came from this file.
            if Self.refusedAuth(failure), let passwordFile { metadata["password_file"] = .string(passwordFile.path) }
            logger.warning("shared token store unavailable; each replica fetches its own tokens until it is back", metadata: metadata)
        }
        let timer = retryTimer ?? LoopTimer(loop: loop) { [unowned self] in
            health.reconnecting()
            open()
        }
        retryTimer = timer
        timer.start(afterMilliseconds: UInt64((retryAfter * 1000).rounded(.up)))
        onLost()
    }

    /// Sends `command` on the command connection; false when the link is not up. An error reply
    /// is a `.success(.error(…))`, logged once per outage here; a failure also ends the link.
    func send(_ command: RedisCommand, completion: @escaping (Result<RedisReply, RedisConnection.Failure>) -> Void) -> Bool {
        guard isReady else { return false }
        let noted: (Result<RedisReply, RedisConnection.Failure>) -> Void = { [weak self] result in
            if let self, case .success(let reply) = result { noteReply(reply, to: command) }
            completion(result)
        }
        if let cluster { return cluster.send(command, completion: noted) }
        return commands?.send(command, completion: noted) ?? false
    }

    private func noteReply(_ reply: RedisReply, to command: RedisCommand) {
        if reply.isDemotionSignal, sentinels != nil {
            // The master was demoted: ask the sentinels again (the command's own answer fails it).
            lost(.refused("the master became a replica (\(command.name) answered \(reply.errorCode ?? "an error")); "
                + "asking the sentinels for the new master"))
        } else if case .error(let text) = reply {
            if health.refused() {
                logger.warning("shared token store refused a command; each replica fetches its own tokens until it works",
                               metadata: place.merging(["command": .string(command.name), "error": .string(text)]) { $1 })
            }
        } else if health.succeeded() {
            logger.info("shared token store reachable again; sharing tokens", metadata: place)
        }
    }

    /// The sentinels promoted `endpoint`: the link moves to it now, whatever it was doing (a
    /// ready link is lost first, so fetches waiting on it go alone until the new one is up).
    private func masterSwitched(to endpoint: RedisEndpoint) {
        guard !stopped, Self.switchNeeded(to: endpoint, current: master, ready: isReady) else { return }
        logger.warning("shared token store: the sentinels promoted a new master; reconnecting to it",
                       metadata: place.merging(["new_master": .string("\(HostSyntax.bracketed(endpoint.host)):\(endpoint.port)")]) { $1 })
        let wasReady = isReady
        sentinels?.cancelFindMaster()
        closeConnections()
        retryTimer?.stop()
        if wasReady {
            _ = health.lost(random: Double.random(in: 0..<1), at: monotonicSeconds())
            onLost()
        }
        if health.state == .down { health.reconnecting() }
        master = endpoint
        connect(to: endpoint)
    }

    /// Whether a `+switch-master` to `endpoint` moves the link: not when the link is up on it
    /// already (the same switch heard again, through another sentinel first), which would tear
    /// a healthy link down and send every waiter alone while the holder refreshes.
    static func switchNeeded(to endpoint: RedisEndpoint, current: RedisEndpoint?, ready: Bool) -> Bool {
        guard ready, let current else { return true }
        return current.host != endpoint.host || current.port != endpoint.port
    }

    /// Whether `failure` is a refused AUTH (the password file's content), not another refused
    /// step (SELECT, SUBSCRIBE) or a master that is not one (ROLE, READONLY, UNBLOCKED).
    static func refusedAuth(_ failure: RedisConnection.Failure) -> Bool {
        guard case .refused(let reason) = failure else { return false }
        return reason.hasPrefix("AUTH:")
    }

    private func closeConnections() {
        commands?.close()
        cluster?.close()
        listener?.close()
        commands = nil
        cluster = nil
        listener = nil
    }

    /// Closes both connections; nothing is reported after this.
    func stop() {
        stopped = true
        closeConnections()
        sentinels?.stop()
        retryTimer?.close()
        retryTimer = nil
    }
}
