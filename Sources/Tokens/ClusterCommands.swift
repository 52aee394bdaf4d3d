// RedisLink's command side against a Redis Cluster (`store.redis` = `redis-cluster://…`): the same
// `send` as one connection, each command taken to the master of its key's slot.
//
//   opening   the seeds are asked `CLUSTER SLOTS` in turn; the first slot map answered makes the
//             link ready (the seed that answered keeps its connection, and the listener subscribes
//             there: Redis Cluster carries a PUBLISH to every node's subscribers)
//   send      ClusterRouting names the command's key, the slot map its master; one RedisConnection
//             per master, opened when a command first needs it (commands wait in order meanwhile)
//   MOVED     the slot map learns the slot's new master, and the command goes there
//   ASK       the command goes to the node named, after `ASKING`, this once (a slot migrating)
//   TRYAGAIN  the command goes again to the same node a moment later, until the store's timeout
//             has passed since it was sent (a migration split its keys: the lease scripts name
//             two, and a node moving their slot serves them only when both or neither are there)
//   at most `redirectionsAtMost` MOVED or ASK per command; past either bound the last reply is
//   the answer (an error: the fetch goes on without Redis, as with any refused command)
//
// Any connection that fails or misses its deadline with commands under way ends the whole, and so
// does the map source's: RedisLink reconnects after its backoff and asks the seeds for a fresh map,
// exactly as with one server. Another master's idle connection that ends is only forgotten: the
// next command for it opens a new one. Runs on the token loop.

import EventLoop
import RedisClient
import RedisProtocol
import TLS

final class ClusterCommands {
    typealias Completion = (Result<RedisReply, RedisConnection.Failure>) -> Void

    static let redirectionsAtMost = 5
    static let tryAgainMilliseconds: UInt64 = 20

    let seeds: RedisClusterSeeds
    private let loop: EventLoop
    private let timeoutMilliseconds: UInt64
    /// `store.tls` for every node, seed or found in the slot map (`rediss-cluster://`); nil for plain TCP.
    private let tls: TLSConfiguration?
    private var map = ClusterSlotMap()
    private var nodes: [ClusterNode: NodeConnection] = [:]
    /// The seed being asked for the map while opening (an index in `seeds.seeds`).
    private var seedAsked = 0
    private var lastSeedFailure: RedisConnection.Failure?
    /// The node whose slot map is in use: the listener subscribes there.
    private(set) var mapSource: RedisEndpoint?
    private(set) var isReady = false
    /// Nodes with a connection, open or opening.
    var connectedNodes: Int { nodes.count }
    private var ended = false
    /// Commands answered TRYAGAIN, sent again when `retryTimer` fires.
    private var retries: [() -> Void] = []
    private var retryTimer: LoopTimer?
    /// Calls the completions of commands never sent with `closed`, after `close()` returned.
    private var closingTimer: LoopTimer?
    private let onReady: () -> Void
    private var onEnded: ((RedisConnection.Failure) -> Void)?

    /// One master's connection and the commands that wait for it to be ready.
    private final class NodeConnection {
        var connection: RedisConnection!
        var waiting: [(command: RedisCommand, completion: Completion)] = []
    }

    /// Starts asking the seeds for the slot map. `onReady` once one answered; `onEnded` at most
    /// once, when no seed answered or a connection failed (not after `close()`).
    init(loop: EventLoop, seeds: RedisClusterSeeds, timeoutMilliseconds: UInt64, tls: TLSConfiguration? = nil,
         onReady: @escaping () -> Void, onEnded: @escaping (RedisConnection.Failure) -> Void) {
        self.loop = loop
        self.seeds = seeds
        self.timeoutMilliseconds = timeoutMilliseconds
        self.tls = tls
        self.onReady = onReady
        self.onEnded = onEnded
        askSeed()
    }

    // MARK: - Opening

    private func askSeed() {
        guard !ended else { return }
        guard seedAsked < seeds.seeds.count else {
            return end(lastSeedFailure ?? .refused("no seed node answered CLUSTER SLOTS"))
        }
        let endpoint = seeds.seeds[seedAsked]
        let node = ClusterNode(host: endpoint.host, port: endpoint.port)
        let seed = NodeConnection()
        let ready: () -> Void = { [weak self, weak seed] in
            seed?.connection.send(RedisCommand(["CLUSTER", "SLOTS"])) { [weak seed] result in
                if let seed { self?.slotsAnswered(result, by: node, over: seed) }
            }
        }
        seed.connection = RedisConnection(loop: loop, endpoint: endpoint, timeoutMilliseconds: timeoutMilliseconds, tls: tls, onReady: ready,
                                          onEnded: { [weak self, weak seed] failure in if let seed { self?.seedFailed(failure, seed) } })
        nodes[node] = seed
    }

    private func slotsAnswered(_ result: Result<RedisReply, RedisConnection.Failure>, by node: ClusterNode, over seed: NodeConnection) {
        guard !ended, nodes[node] === seed else { return }
        switch result {
        case .success(let reply):
            guard let answered = ClusterSlotMap(slotsReply: reply, askedHost: node.host) else {
                // An error (cluster support disabled) or no slot assigned yet: the next seed may know.
                let reason = if case .error(let text) = reply { text } else { "CLUSTER SLOTS assigned no slot" }
                return seedFailed(.refused(reason), seed)
            }
            map = answered
            mapSource = seeds.seeds[seedAsked]
            isReady = true
            onReady()
        case .failure(let failure):
            seedFailed(failure, seed)
        }
    }

    private func seedFailed(_ failure: RedisConnection.Failure, _ seed: NodeConnection) {
        guard !ended else { return }
        guard !isReady else { return connectionEnded(failure, seed) }
        seed.connection.close()
        if let key = nodes.first(where: { $0.value === seed })?.key { nodes[key] = nil }
        lastSeedFailure = failure
        seedAsked += 1
        askSeed()
    }

    // MARK: - Commands

    /// Sends `command` to the master of its key's slot, following redirections; false when not
    /// ready (no completion then).
    func send(_ command: RedisCommand, completion: @escaping Completion) -> Bool {
        guard isReady, !ended else { return false }
        dispatch(command, to: route(command), asking: false, redirections: 0, sent: loop.nowMilliseconds, completion: completion)
        return true
    }

    /// The master of the command's slot; for a command with no key, or a slot no master serves,
    /// the node the map came from.
    private func route(_ command: RedisCommand) -> ClusterNode {
        if let slot = ClusterRouting.slot(of: command), let node = map.node(for: slot) { return node }
        return mapSource.map { ClusterNode(host: $0.host, port: $0.port) } ?? map.masters[0]
    }

    /// `redirections`: the MOVED and ASK followed so far; `sent`: when `send` was called.
    private func dispatch(_ command: RedisCommand, to node: ClusterNode, asking: Bool, redirections: Int, sent: UInt64,
                          completion: @escaping Completion) {
        guard !ended else { return completion(.failure(.closed("closed"))) }
        let target = connection(to: node)
        let answered: Completion = { [weak self] result in
            guard let self, !ended, case .success(let reply) = result,
                  let redirection = ClusterRedirection(reply, askedHost: node.host) else { return completion(result) }
            switch redirection {
            case .moved(let slot, let next) where redirections < Self.redirectionsAtMost:
                // A MOVED to one master too many is not followed: its error is the answer.
                guard map.assign(slot, to: next) else { return completion(result) }
                dispatch(command, to: next, asking: false, redirections: redirections + 1, sent: sent, completion: completion)
            case .ask(_, let next) where redirections < Self.redirectionsAtMost:
                dispatch(command, to: next, asking: true, redirections: redirections + 1, sent: sent, completion: completion)
            case .tryAgain where loop.nowMilliseconds + Self.tryAgainMilliseconds < sent + timeoutMilliseconds:
                retryLater { [unowned self] in
                    dispatch(command, to: node, asking: asking, redirections: redirections, sent: sent, completion: completion)
                }
            default:
                completion(result)
            }
        }
        if asking { transmit(RedisCommand(["ASKING"]), over: target) { _ in } }
        transmit(command, over: target, completion: answered)
    }

    private func transmit(_ command: RedisCommand, over target: NodeConnection, completion: @escaping Completion) {
        if target.connection.isReady {
            target.connection.send(command, completion: completion)
        } else {
            target.waiting.append((command, completion))
        }
    }

    /// The connection to `node`, opened now if there is none.
    private func connection(to node: ClusterNode) -> NodeConnection {
        if let existing = nodes[node] { return existing }
        let opened = NodeConnection()
        opened.connection = RedisConnection(loop: loop, endpoint: seeds.node(host: node.host, port: node.port),
                                            timeoutMilliseconds: timeoutMilliseconds, tls: tls, onReady: { [weak opened] in
            guard let opened else { return }
            let waiting = opened.waiting
            opened.waiting = []
            for (command, completion) in waiting { opened.connection.send(command, completion: completion) }
        }, onEnded: { [weak self, weak opened] failure in
            if let opened { self?.connectionEnded(failure, opened) }
        })
        nodes[node] = opened
        return opened
    }

    /// Queues `retry` for the next round, `tryAgainMilliseconds` after the first retry queued
    /// for it: later TRYAGAINs join the round, never postpone it.
    private func retryLater(_ retry: @escaping () -> Void) {
        retries.append(retry)
        guard retries.count == 1 else { return }
        let timer = retryTimer ?? LoopTimer(loop: loop) { [unowned self] in
            let due = retries
            retries = []
            for retry in due { retry() }
        }
        retryTimer = timer
        timer.start(afterMilliseconds: Self.tryAgainMilliseconds)
    }

    // MARK: - Ending

    private func connectionEnded(_ failure: RedisConnection.Failure, _ node: NodeConnection) {
        if let key = nodes.first(where: { $0.value === node })?.key, isReady,
           mapSource.map({ ClusterNode(host: $0.host, port: $0.port) }) != key,
           node.waiting.isEmpty, node.connection.unansweredCount == 0 {
            // An idle master's connection (a server or load balancer timing idle clients out): no
            // command is lost, the next one for that master opens a new connection.
            nodes[key] = nil
            return
        }
        let waiting = node.waiting
        node.waiting = []
        for (_, completion) in waiting { completion(.failure(failure)) }
        end(failure)
    }

    private func end(_ failure: RedisConnection.Failure) {
        guard !ended else { return }
        let ended = onEnded
        close()
        ended?(failure)
    }

    /// Closes every connection; commands under way complete with `closed` (never within this
    /// call). `onEnded` is not called. Idempotent.
    func close() {
        guard !ended else { return }
        ended = true
        isReady = false
        onEnded = nil
        var unsent: [Completion] = nodes.values.flatMap { $0.waiting.map(\.completion) }
        for node in nodes.values {
            node.waiting = []
            node.connection.close()
        }
        nodes = [:]
        unsent += retries.map { retry in { _ in retry() } }
        retries = []
        retryTimer?.close()
        retryTimer = nil
        guard !unsent.isEmpty else { return }
        // Held by its own callback until it has run: the owner may have let go of this object.
        let timer = LoopTimer(loop: loop) { [self] in
            for completion in unsent { completion(.failure(.closed("closed"))) }
            closingTimer?.close()
            closingTimer = nil
        }
        closingTimer = timer
        timer.start(afterMilliseconds: 0)
    }
}
