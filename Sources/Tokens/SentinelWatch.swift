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
// after `stop()` or after a newer question replaced it: callbacks carry their question's (and
// subscription's) number, since a connection may end before its initializer has returned.

import EventLoop
import Logging
import RedisClient
import RedisProtocol
import TLS

final class SentinelWatch {
    let topology: SentinelTopology
    private let loop: EventLoop
    private let timeoutMilliseconds: UInt64
    /// `store.tls` for the sentinels (`rediss-sentinel://`); nil for plain TCP.
    private let tls: TLSConfiguration?
    private let logger: Logger
    /// The sentinels promoted `master` for our master's name.
    private let onSwitch: (RedisEndpoint) -> Void
    /// The sentinel that answered last: asked first next time, and subscribed to.
    private var lastAnswered = 0
    /// The question under way.
    private var question: Question?
    /// Questions asked so far: each one's number tells its callbacks from a later one's.
    private var questionsAsked = 0
    private var subscription: RedisConnection?
    /// Subscriptions attempted so far, and the last of them that ended.
    private var subscriptionsMade = 0
    private var subscriptionEnded = 0
    /// The sentinel `subscription` is (or was last) on.
    private var subscribedTo = 0
    private var resubscribeTimer: LoopTimer?
    private var stopped = false

    /// Pause between subscription attempts when one ends: a sentinel that is down costs one
    /// connection attempt a second, and a switch is seen by the others' answers meanwhile.
    static let resubscribeMilliseconds: UInt64 = 1000

    /// One sentinel asked: the round it belongs to, what hears the master, and its connection
    /// (nil until made: a connection may end before its initializer returns, a refused connect
    /// on some systems).
    private struct Question {
        let number: Int
        var round: SentinelRound
        let completion: (Result<RedisEndpoint, NoMaster>) -> Void
        var connection: RedisConnection?
    }

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

    init(loop: EventLoop, topology: SentinelTopology, timeoutMilliseconds: UInt64, tls: TLSConfiguration? = nil, logger: Logger,
         onSwitch: @escaping (RedisEndpoint) -> Void) {
        self.loop = loop
        self.topology = topology
        self.timeoutMilliseconds = timeoutMilliseconds
        self.tls = tls
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
        questionsAsked += 1
        let number = questionsAsked
        question = Question(number: number, round: round, completion: completion)
        let connection = RedisConnection(loop: loop, endpoint: topology.sentinels[index].endpoint(usesTLS: topology.usesTLS),
                                         timeoutMilliseconds: timeoutMilliseconds, tls: tls,
                                         onReady: { [weak self] in self?.askReady(number) },
                                         onEnded: { [weak self] _ in self?.answered(.unanswered, to: number) })
        if question?.number == number {
            question?.connection = connection
        } else {
            // Ended already, and the round went on.
            connection.close()
        }
    }

    private func askReady(_ number: Int) {
        guard let question, question.number == number, let connection = question.connection else { return }
        connection.send(MasterLookup.command(masterName: topology.masterName)) { [weak self] result in
            switch result {
            case .success(let reply): self?.answered(MasterLookup(reply), to: number)
            case .failure: self?.answered(.unanswered, to: number)
            }
        }
    }

    /// The sentinel of question `number` said `lookup` (or could not be asked).
    private func answered(_ lookup: MasterLookup, to number: Int) {
        guard var asked = question, asked.number == number else { return }
        question = nil
        asked.connection?.close()
        let next = asked.round.heard(lookup)
        follow(next, round: asked.round, completion: asked.completion)
    }

    /// The master the last answer named could not be used (unreachable, or not a master): that
    /// sentinel may be stale, so the next round starts at the next one rather than at it forever.
    func namedMasterUnusable() {
        lastAnswered = Self.firstAfterUnusable(lastAnswered, count: topology.sentinels.count)
    }

    /// The sentinel a round starts at after the one at `answered` named an unusable master.
    static func firstAfterUnusable(_ answered: Int, count: Int) -> Int {
        (answered + 1) % count
    }

    /// Drops the question under way, if any: its completion is never called.
    func cancelFindMaster() {
        question?.connection?.close()
        question = nil
    }

    // MARK: - Following failovers

    private func subscribe(to index: Int) {
        subscriptionsMade += 1
        let number = subscriptionsMade
        subscribedTo = index
        let sentinel = topology.sentinels[index]
        let connection = RedisConnection(loop: loop, endpoint: sentinel.endpoint(usesTLS: topology.usesTLS),
                                         timeoutMilliseconds: timeoutMilliseconds, tls: tls,
                                         subscribingTo: MasterSwitch.channel,
                                         onMessage: { [weak self] in self?.heard($0) },
                                         onReady: { [weak self] in self?.logger.debug("following failovers", metadata: ["sentinel": .string(sentinel.description)]) },
                                         onEnded: { [weak self] in self?.subscriptionEnded($0, number: number) })
        // One that ended before its initializer returned is not kept: the next is on its way.
        subscription = subscriptionEnded == number ? nil : connection
    }

    private func heard(_ message: [UInt8]) {
        guard let change = MasterSwitch(message: message), change.masterName == topology.masterName else { return }
        onSwitch(topology.master(host: change.new.host, port: change.new.port))
    }

    private func subscriptionEnded(_ failure: RedisConnection.Failure, number: Int) {
        guard number == subscriptionsMade else { return }
        subscriptionEnded = number
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
