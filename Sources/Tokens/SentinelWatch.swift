// SentinelWatch: RedisLink's eyes on Redis Sentinel (`store.redis` = `redis-sentinel://…`). It
// asks the sentinels in turn where the master is (`SENTINEL get-master-addr-by-name`, the one that
// answered last first: RedisProtocol's SentinelRound decides the order) and keeps one connection
// subscribed to `+switch-master` on a sentinel, so that a failover is followed at once rather
// than found by the next failed command. What the sentinels say is parsed in RedisProtocol
// (SentinelReplies.swift); this file is the I/O alone. Runs on the token loop only.
//
// Lifetime: each question is its own short connection, closed once answered; the subscription
// lives until `stop()`. When it ends (its sentinel died), another sentinel is subscribed to a
// second later, in turn, until one accepts. A question's completion is called once at most, never
// after `stop()` or after a newer question replaced it.

import EventLoop
import Logging
import RedisClient
import RedisProtocol

final class SentinelWatch {
    let topology: SentinelTopology
    private let loop: EventLoop
    private let timeoutMilliseconds: UInt64
    private let logger: Logger
    /// The sentinels promoted `master` for our master's name.
    private let onSwitch: (RedisEndpoint) -> Void
    /// The sentinel that answered last: asked first next time, and subscribed to.
    private var lastAnswered = 0
    /// The question under way: its connection, and what hears the master.
    private var question: (connection: RedisConnection, round: SentinelRound, completion: (Result<RedisEndpoint, NoMaster>) -> Void)?
    private var subscription: RedisConnection?
    /// The sentinel `subscription` is (or was last) on.
    private var subscribedTo = 0
    private var resubscribeTimer: LoopTimer?
    private var stopped = false

    /// Pause between subscription attempts when one ends: a sentinel that is down costs one
    /// connection attempt a second, and a switch is seen by the others' answers meanwhile.
    static let resubscribeMilliseconds: UInt64 = 1000

    /// No sentinel named the master. Its description names counts only (and the master's name,
    /// which is no secret).
    struct NoMaster: Error, CustomStringConvertible {
        let masterName: String
        let unknownName: Int
        let unanswered: Int

        var description: String {
            var parts: [String] = []
            if unknownName > 0 { parts.append("\(unknownName) do not know a master named \"\(masterName)\"") }
            if unanswered > 0 { parts.append("\(unanswered) did not answer") }
            return "no sentinel named the master: " + parts.joined(separator: ", ")
        }
    }

    init(loop: EventLoop, topology: SentinelTopology, timeoutMilliseconds: UInt64, logger: Logger,
         onSwitch: @escaping (RedisEndpoint) -> Void) {
        self.loop = loop
        self.topology = topology
        self.timeoutMilliseconds = timeoutMilliseconds
        self.logger = logger
        self.onSwitch = onSwitch
    }

    // MARK: - Where the master is

    /// Asks the sentinels in turn; `completion` hears the master the first that knows it names
    /// (logged in to with the URL's credentials), or why none did. A question under way is
    /// dropped (its completion never called).
    func findMaster(_ completion: @escaping (Result<RedisEndpoint, NoMaster>) -> Void) {
        guard !stopped else { return }
        cancelFindMaster()
        let round = SentinelRound(count: topology.sentinels.count, first: lastAnswered)
        follow(round.start, round: round, completion: completion)
    }

    private func follow(_ next: SentinelRound.Next, round: SentinelRound, completion: @escaping (Result<RedisEndpoint, NoMaster>) -> Void) {
        switch next {
        case .ask(let index):
            ask(index, round: round, completion: completion)
        case .found(let address, let sentinel):
            question = nil
            lastAnswered = sentinel
            if subscription == nil { subscribe(to: sentinel) }
            completion(.success(topology.master(host: address.host, port: address.port)))
        case .noMaster(let unknownName, let unanswered):
            question = nil
            completion(.failure(NoMaster(masterName: topology.masterName, unknownName: unknownName, unanswered: unanswered)))
        }
    }

    private func ask(_ index: Int, round: SentinelRound, completion: @escaping (Result<RedisEndpoint, NoMaster>) -> Void) {
        let endpoint = topology.sentinels[index].endpoint
        let connection = RedisConnection(loop: loop, endpoint: endpoint, timeoutMilliseconds: timeoutMilliseconds,
                                         onReady: { [weak self] in self?.askReady() },
                                         onEnded: { [weak self] _ in self?.answered(.unanswered) })
        question = (connection, round, completion)
    }

    private func askReady() {
        guard let connection = question?.connection else { return }
        connection.send(MasterLookup.command(masterName: topology.masterName)) { [weak self] result in
            guard let self, question?.connection === connection else { return }
            switch result {
            case .success(let reply): answered(MasterLookup(reply))
            case .failure: answered(.unanswered)
            }
        }
    }

    /// The sentinel asked now said `lookup` (or could not be asked).
    private func answered(_ lookup: MasterLookup) {
        guard let (connection, asked, completion) = question else { return }
        connection.close()
        var round = asked
        follow(round.heard(lookup), round: round, completion: completion)
    }

    /// Drops the question under way, if any: its completion is never called.
    func cancelFindMaster() {
        question?.connection.close()
        question = nil
    }

    // MARK: - Following failovers

    private func subscribe(to index: Int) {
        subscribedTo = index
        let sentinel = topology.sentinels[index]
        subscription = RedisConnection(loop: loop, endpoint: sentinel.endpoint, timeoutMilliseconds: timeoutMilliseconds,
                                       subscribingTo: MasterSwitch.channel,
                                       onMessage: { [weak self] in self?.heard($0) },
                                       onReady: { [weak self] in self?.logger.debug("following failovers", metadata: ["sentinel": .string(sentinel.description)]) },
                                       onEnded: { [weak self] in self?.subscriptionEnded($0) })
    }

    private func heard(_ message: [UInt8]) {
        guard let change = MasterSwitch(message: message), change.masterName == topology.masterName else { return }
        onSwitch(topology.master(host: change.new.host, port: change.new.port))
    }

    private func subscriptionEnded(_ failure: RedisConnection.Failure) {
        subscription = nil
        guard !stopped else { return }
        logger.debug("sentinel subscription ended; trying the next sentinel", metadata: [
            "sentinel": .string(topology.sentinels[subscribedTo].description), "error": .string(failure.description)])
        let timer = resubscribeTimer ?? LoopTimer(loop: loop) { [unowned self] in
            if subscription == nil { subscribe(to: (subscribedTo + 1) % topology.sentinels.count) }
        }
        resubscribeTimer = timer
        timer.start(afterMilliseconds: Self.resubscribeMilliseconds)
    }

    /// Closes every connection; nothing is reported after this.
    func stop() {
        stopped = true
        cancelFindMaster()
        subscription?.close()
        subscription = nil
        resubscribeTimer?.close()
        resubscribeTimer = nil
    }
}
