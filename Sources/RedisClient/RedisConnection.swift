// RedisClient: one connection to Redis on an EventLoop, over the relay's own streams — plain TCP
// (TCPStream) or TLS (TLSStream, the engine the upstream client uses, so the same verification,
// SNI, pins and client certificates) — writing commands in RESP (RedisCommand) and reading
// replies with RESPReader. Everything here runs on the loop's thread.
//
// Lifetime rules:
//  1. While its stream is open, the stream holds the connection (its delegate, TCPStream's rule);
//     while the host name resolves, the resolver's completion does. A connection its owner lets
//     go without `close()` therefore lives on until it ends.
//  2. From the moment it ends — `close()`, a failure, a missed deadline — until its last step
//     has run, the connection holds itself (`selfUntilFinished`). Ending closes the stream at
//     once (queued writes dropped, later bytes never read), and on a 0 ms timer completes every
//     command under way with `closed` and closes the timer: a completion never runs inside
//     `close()` nor inside the callback that ended the connection, so the owner is never called
//     back while it is busy.
//  3. Every command, and the opening as a whole (name resolution, connect, the TLS handshake,
//     AUTH, SELECT, the SUBSCRIBE or a PING), has a deadline: the connection's timeout. The
//     first deadline missed ends the connection: a server that does not answer in time is
//     treated as down, and a late reply is never matched to a later command.
//  4. A reply that is not RESP2 within RESPReader's limits, or one nobody waits for, ends the
//     connection: its framing can no longer be trusted. Nothing a server sends stops the process.

import EventLoop
import RedisProtocol
import TLS
import TLSStream

public final class RedisConnection: ByteStreamDelegate {
    /// Why a connection or a command failed. Texts come from the system, TLS or the server; none
    /// holds a password (the endpoint is shown redacted).
    public enum Failure: Error, Sendable, Equatable, CustomStringConvertible {
        /// Name resolution, connecting or the TLS handshake failed.
        case unreachable(String)
        /// No answer within the timeout.
        case timedOut(milliseconds: UInt64)
        /// The server closed the connection, or it failed, or its owner closed it.
        case closed(String)
        /// The server refused a step of the opening (AUTH, SELECT, SUBSCRIBE): its error reply.
        case refused(String)

        public var description: String {
            switch self {
            case .unreachable(let reason): "unreachable: \(reason)"
            case .timedOut(let milliseconds): "no answer within \(milliseconds) ms"
            case .closed(let reason): "connection closed: \(reason)"
            case .refused(let reason): "refused: \(reason)"
            }
        }
    }

    public let loop: EventLoop
    public let endpoint: RedisEndpoint
    public let timeoutMilliseconds: UInt64
    /// True once the opening is done and until the connection ends: `send` works.
    public var isReady: Bool { if case .ready = phase { true } else { false } }
    /// Commands sent and not answered yet, the opening's included; while `onEnded` runs, those
    /// the ending will complete with a failure.
    public var unansweredCount: Int { pending.count }

    private let tls: TLSConfiguration?
    private var phase = Phase.connecting
    private var stream: (any ByteStream)?
    private var reader = RESPReader()
    /// Commands sent, oldest first: Redis answers them in this order.
    private var pending: [Pending] = []
    /// The opening's deadline; nil once ready.
    private var openingDeadline: UInt64?
    private var onReady: (() -> Void)?
    private var onEnded: ((Failure) -> Void)?
    /// What to call with each message once subscribed; nil for a command connection.
    private var subscription: (channel: [UInt8], onMessage: ([UInt8]) -> Void)?
    private var timer: LoopTimer!
    /// Rule 2.
    private var selfUntilFinished: RedisConnection?

    private enum Phase {
        /// Resolving, connecting, the TLS handshake.
        case connecting
        /// Connected: the opening's commands are under way.
        case opening
        case ready
        /// Ended (rule 2): the 0 ms step completes what is under way with this.
        case ending(Failure)
        case finished

        /// Not ending or ended.
        var isOpen: Bool {
            switch self {
            case .connecting, .opening, .ready: true
            case .ending, .finished: false
            }
        }
    }

    private struct Pending {
        let deadline: UInt64
        var completion: ((Result<RedisReply, Failure>) -> Void)?
    }

    /// Starts connecting, over TLS with `tls` (the endpoint is then `rediss://`), plain TCP
    /// without; a `rediss://` endpoint without `tls` ends unreachable (never in clear). `onReady`
    /// is called once AUTH, SELECT and the SUBSCRIBE (when `channel` is given) succeeded;
    /// `onEnded` at most once, when the connection fails or ends other than by `close()`, never
    /// from inside this initialiser. With `channel`, the connection only listens: `onMessage`
    /// gets each message published on it, and `send` is not for it.
    public init(loop: EventLoop, endpoint: RedisEndpoint, timeoutMilliseconds: UInt64, tls: TLSConfiguration? = nil,
                subscribingTo channel: [UInt8]? = nil, onMessage: @escaping ([UInt8]) -> Void = { _ in },
                onReady: @escaping () -> Void, onEnded: @escaping (Failure) -> Void) {
        self.loop = loop
        self.endpoint = endpoint
        self.timeoutMilliseconds = timeoutMilliseconds
        self.tls = tls
        self.onReady = onReady
        self.onEnded = onEnded
        subscription = channel.map { ($0, onMessage) }
        openingDeadline = loop.nowMilliseconds + timeoutMilliseconds
        timer = LoopTimer(loop: loop) { [unowned self] in timerFired() }
        timer.start(afterMilliseconds: timeoutMilliseconds)
        guard tls != nil || !endpoint.usesTLS else {
            // Never plain TCP for a TLS endpoint: the password and entries would go in clear.
            endLater(.unreachable("\(endpoint.host):\(endpoint.port): rediss:// without a TLS configuration"))
            return
        }
        Resolver.resolve(on: loop, host: endpoint.host, port: endpoint.port) { [self] result in
            guard case .connecting = phase else { return }
            switch result {
            case .success(let addresses): connect(to: addresses[0])
            // Never ended from inside the initialiser: a host libuv refuses at once (one over
            // 255 bytes) fails before `resolve` returns.
            case .failure(let error): endLater(.unreachable("cannot resolve \(endpoint.host): \(error)"))
            }
        }
    }

    /// Sends `command`; `completion` gets its reply (an error reply is a `.success(.error(…))`:
    /// the server is fine, the command was not) or why none came. False, and no completion, when
    /// the connection is not ready.
    @discardableResult
    public func send(_ command: RedisCommand, completion: @escaping (Result<RedisReply, Failure>) -> Void) -> Bool {
        guard isReady else { return false }
        write(command, completion: completion)
        return true
    }

    /// Ends the connection now; commands under way complete with `closed`. `onEnded` is not
    /// called. Idempotent.
    public func close() {
        onEnded = nil
        end(.closed("closed"))
    }

    /// Probes for an idle connection (the listener's above all, which only reads): a server lost
    /// without a reset (a NAT or load balancer's idle timeout) is found within a minute.
    public static let keepAlive = TCPKeepAlive(idleSeconds: 30, intervalSeconds: 10, probes: 3)

    // MARK: - Opening

    private func connect(to address: SocketAddress) {
        do {
            stream = try TLSStream.connect(on: loop, to: address, tls: tls, host: endpoint.host, keepAlive: Self.keepAlive, delegate: self)
        } catch {
            // Never reported from inside the initialiser (the resolver answers an IP at once).
            return endLater(.unreachable("\(endpoint.host):\(endpoint.port): \(error)"))
        }
    }

    /// Connected (and, over TLS, the handshake done): the opening's commands go out at once, one
    /// after the other — AUTH, SELECT, then SUBSCRIBE, or PING so that a server that accepts
    /// connections but never answers fails the opening. The first error reply ends it.
    private func beginOpening() {
        phase = .opening
        stream?.startReading()
        var steps: [RedisCommand] = []
        if let password = endpoint.password {
            steps.append(RedisCommand(["AUTH"] + (endpoint.user.map { [.text($0)] } ?? []) + [.secret(password)]))
        }
        if endpoint.database != 0 { steps.append(RedisCommand(["SELECT", .integer(Int64(endpoint.database))])) }
        if let subscription {
            steps.append(RedisCommand(["SUBSCRIBE", .bytes(subscription.channel)]))
        } else if steps.isEmpty {
            steps.append(RedisCommand(["PING"]))
        }
        for (index, step) in steps.enumerated() {
            let last = index == steps.count - 1
            write(step) { [unowned self] result in
                switch result {
                case .success(.error(let text)): end(.refused("\(step.name): \(text)"))
                case .success(let reply) where step.name == "SUBSCRIBE" && !Self.isSubscribeConfirmation(reply):
                    end(.closed("SUBSCRIBE was answered \(reply)"))
                case .success: if last { becomeReady() }
                case .failure(let failure): end(failure)
                }
            }
        }
    }

    private func becomeReady() {
        guard case .opening = phase else { return }
        phase = .ready
        openingDeadline = nil
        armDeadline()
        let ready = onReady
        onReady = nil
        ready?()
    }

    /// `["subscribe", channel, count]`.
    private static func isSubscribeConfirmation(_ reply: RedisReply) -> Bool {
        guard let parts = reply.elements, parts.count == 3 else { return false }
        return parts[0].text?.lowercased() == "subscribe"
    }

    // MARK: - Commands and replies

    private func write(_ command: RedisCommand, completion: @escaping (Result<RedisReply, Failure>) -> Void) {
        guard let stream else { return }
        pending.append(Pending(deadline: loop.nowMilliseconds + timeoutMilliseconds, completion: completion))
        if pending.count == 1 && openingDeadline == nil { armDeadline() }
        command.encoded.withUnsafeBytes { stream.write($0) }
    }

    private func received(_ reply: RedisReply) {
        if !pending.isEmpty {
            let completion = pending.removeFirst().completion
            armDeadline()
            completion?(.success(reply))
        } else if case .ready = phase, let subscription {
            // `["message", channel, payload]`; (un)subscribe confirmations are not for the owner.
            guard let parts = reply.elements, parts.count == 3, parts[0].text?.lowercased() == "message",
                  let payload = parts[2].bytes else { return }
            subscription.onMessage(payload)
        } else {
            // A long array's description would flood the log: its start tells enough.
            let shown = "\(reply)"
            end(.closed("a reply to no command (\(shown.count > 200 ? String(shown.prefix(200)) + "…" : shown))"))
        }
    }

    // MARK: - ByteStreamDelegate

    public func stream(_ stream: any ByteStream, didConnectWith error: UVError?) {
        guard case .connecting = phase else { return }
        if let error {
            let reason = stream.failureReason.map { "TLS: \($0)" } ?? "\(error)"
            return end(.unreachable("\(endpoint.host):\(endpoint.port): \(reason)"))
        }
        beginOpening()
    }

    public func stream(_ stream: any ByteStream, didRead bytes: UnsafeRawBufferPointer) {
        reader.feed(bytes)
        do throws(RESPError) {
            // A reply's completion may end the connection: no reply is handed on after that.
            while phase.isOpen, let reply = try reader.next() {
                received(reply)
            }
        } catch {
            end(.closed("\(error)"))
        }
    }

    public func stream(_ stream: any ByteStream, didEndWith error: UVError?) {
        let reason = stream.failureReason.map { "TLS: \($0)" } ?? error.map { "\($0)" } ?? "closed by the server"
        end(.closed(reason))
    }

    /// The stream closed itself (a write libuv refused): nothing more will come over it.
    public func streamDidClose(_ stream: any ByteStream) {
        end(.closed("the connection failed"))
    }

    // MARK: - Deadlines and endings

    private func armDeadline() {
        guard phase.isOpen else { return }
        if let due = openingDeadline ?? pending.first?.deadline {
            timer.start(afterMilliseconds: due.subtractingSaturated(loop.nowMilliseconds))
        } else {
            timer.stop()
        }
    }

    private func timerFired() {
        switch phase {
        case .connecting, .opening:
            if let failureFoundEarly {
                end(failureFoundEarly)
            } else if openingDeadline.map({ $0 <= loop.nowMilliseconds }) ?? false {
                end(.timedOut(milliseconds: timeoutMilliseconds))
            } else {
                armDeadline()
            }
        case .ready:
            guard let first = pending.first, first.deadline <= loop.nowMilliseconds else { return armDeadline() }
            let completion = first.completion
            pending[0].completion = nil
            completion?(.failure(.timedOut(milliseconds: timeoutMilliseconds)))
            end(.timedOut(milliseconds: timeoutMilliseconds))
        case .ending(let failure):
            finish(failure)
        case .finished:
            break
        }
    }

    /// The connection ended (rule 2): the stream closes now, the owner hears it now (unless it
    /// closed the connection), and what is under way completes on the 0 ms step.
    private func end(_ failure: Failure) {
        guard phase.isOpen else { return }
        phase = .ending(failure)
        selfUntilFinished = self
        stream?.close()
        stream = nil
        timer.start(afterMilliseconds: 0)
        let ended = onEnded
        onEnded = nil
        onReady = nil
        ended?(failure)
    }

    /// Ends the connection on the next loop turn: for failures found before the owner has it.
    private func endLater(_ failure: Failure) {
        failureFoundEarly = failure
        timer.start(afterMilliseconds: 0)
    }

    /// What `endLater` ends the connection with, on the timer.
    private var failureFoundEarly: Failure?

    /// The last step of an ending: commands under way complete with `closed` (the one that
    /// timed out was completed already), the timer closes, the self-hold goes.
    private func finish(_ failure: Failure) {
        phase = .finished
        let reason: String = if case .closed(let text) = failure { text } else { "closed" }
        let completions = pending.compactMap(\.completion)
        pending = []
        timer.close()
        subscription = nil
        for completion in completions { completion(.failure(.closed(reason))) }
        selfUntilFinished = nil
    }
}

extension UInt64 {
    fileprivate func subtractingSaturated(_ other: UInt64) -> UInt64 {
        self > other ? self - other : 0
    }
}
