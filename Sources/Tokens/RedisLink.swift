// The token loop's link to the shared Redis store: two connections to one endpoint, one for
// commands and one subscribed to the entries' channel (RESP2 cannot mix the two), ready when
// both are. When either fails or a command times out, both close and the link reconnects after a
// backoff; RedisLinkHealth decides when, and when to log (once per outage). Runs on the token
// loop only, like everything in this module that talks to Redis. Against a Redis Cluster,
// ClusterCommands takes each command to its key's master, and the listener subscribes on the node
// that gave the slot map, once the map is in.

import EventLoop
import Logging
import RedisClient
import RedisProtocol
import TLS

final class RedisLink {
    let topology: RedisTopology
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
    }

    var isReady: Bool { health.state == .ready }

    func start() {
        open()
    }

    private func open() {
        connectionsUp = 0
        let topology = passwordFile?.topology(self.topology, logger: logger) ?? self.topology
        guard case .server(let endpoint) = topology else { return openCluster(topology) }
        commands = RedisConnection(loop: loop, endpoint: endpoint, timeoutMilliseconds: timeoutMilliseconds, tls: tls,
                                   onReady: { [weak self] in self?.connectionUp() },
                                   onEnded: { [weak self] in self?.lost($0) })
        listener = RedisConnection(loop: loop, endpoint: endpoint, timeoutMilliseconds: timeoutMilliseconds, tls: tls,
                                   subscribingTo: channel, onMessage: { [weak self] in self?.onMessage($0) },
                                   onReady: { [weak self] in self?.connectionUp() },
                                   onEnded: { [weak self] in self?.lost($0) })
    }

    private func openCluster(_ topology: RedisTopology) {
        guard case .cluster(let seeds) = topology else { return }
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
        let resumed = health.connected(at: monotonicSeconds())
        if !everReady {
            everReady = true
            logger.info("shared token store connected", metadata: ["redis": .string(topology.description)])
        } else if resumed {
            logger.info("shared token store reachable again; sharing tokens", metadata: ["redis": .string(topology.description)])
        }
        onReady()
    }

    private func lost(_ failure: RedisConnection.Failure) {
        guard !stopped else { return }
        commands?.close()
        cluster?.close()
        listener?.close()
        commands = nil
        cluster = nil
        listener = nil
        let (begins, retryAfter) = health.lost(random: Double.random(in: 0..<1), at: monotonicSeconds())
        if begins {
            var metadata: Logger.Metadata = ["redis": .string(topology.description), "error": .string(failure.description)]
            // A refused AUTH: the password came from this file.
            if case .refused = failure, let passwordFile { metadata["password_file"] = .string(passwordFile.path) }
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
        if case .error(let text) = reply {
            if health.refused() {
                logger.warning("shared token store refused a command; each replica fetches its own tokens until it works",
                               metadata: ["redis": .string(topology.description), "command": .string(command.name),
                                          "error": .string(text)])
            }
        } else if health.succeeded() {
            logger.info("shared token store reachable again; sharing tokens", metadata: ["redis": .string(topology.description)])
        }
    }

    /// Closes both connections; nothing is reported after this.
    func stop() {
        stopped = true
        commands?.close()
        cluster?.close()
        listener?.close()
        commands = nil
        cluster = nil
        listener = nil
        retryTimer?.close()
        retryTimer = nil
    }
}
