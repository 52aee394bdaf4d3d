// RedisClient: one connection to Redis over hiredis's async API, on an EventLoop (hiredis's libuv
// adapter polls the socket on that loop). Everything here runs on the loop's thread.
//
// Lifetime rules (what hiredis 0.14's async.c does decides them):
//  1. While hiredis's context exists, its `data` holds a retained reference to the connection,
//     and each command under way holds one more (its callback's privdata). A callback therefore
//     never finds the connection gone.
//  2. hiredis frees the context itself when the connection fails or the server closes it: it
//     first calls every pending command's callback with a nil reply, then the disconnect callback
//     (only once connected; a failed connect calls the connect callback with an error instead).
//  3. `close()` never frees the context directly: it schedules `redisAsyncFree` on a 0 ms timer,
//     so the free never runs inside a hiredis callback (freeing inside the connect callback would
//     be a use after free in hiredis) and never calls the owner back while the owner is busy.
//     Replies that arrive meanwhile are reported as `closed`.
//  4. Every command, and the opening as a whole (name resolution, connect, AUTH, SELECT, the
//     SUBSCRIBE or a PING), has a deadline: the connection's timeout. The first deadline missed
//     ends the connection: a server that does not answer in time is treated as down, and a late
//     reply is never matched to a later command.
//  5. The timers are closed before the last reference goes (rule 1), so the loop ends cleanly.

internal import CHiredis
import EventLoop
import RedisProtocol

public final class RedisConnection {
    /// Why a connection or a command failed. Texts come from hiredis or the server; none holds a
    /// password (the endpoint is shown redacted).
    public enum Failure: Error, Sendable, Equatable, CustomStringConvertible {
        /// Name resolution or connecting failed.
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
    public private(set) var isReady = false

    private var context: UnsafeMutablePointer<redisAsyncContext>?
    /// The retain rule 1 keeps for the context.
    private var contextRetain: Unmanaged<RedisConnection>?
    /// The connect callback said yes: hiredis will call the disconnect callback when it frees.
    private var established = false
    /// No more commands; replies are reported as closed.
    private var ending = false
    /// Commands sent, oldest first: hiredis answers them in this order.
    private var pending: [Pending] = []
    private var opening: Opening?
    private var onReady: (() -> Void)?
    private var onEnded: ((Failure) -> Void)?
    private var deadlineTimer: LoopTimer!
    private var freeTimer: LoopTimer!

    private struct Pending {
        let deadline: UInt64
        var completion: ((Result<RedisReply, Failure>) -> Void)?
    }

    /// What the opening still has to do.
    private struct Opening {
        let deadline: UInt64
        /// Sent once connected: AUTH, SELECT (each must answer OK), then PING if neither was needed.
        var steps: [RedisCommand]
        /// The channel to subscribe to last, and what to call with each message on it.
        var subscription: (channel: [UInt8], onMessage: ([UInt8]) -> Void)?
    }

    /// Starts connecting. `onReady` is called once AUTH, SELECT and the SUBSCRIBE (when
    /// `channel` is given) succeeded; `onEnded` at most once, when the connection fails or ends
    /// other than by `close()`. With `channel`, the connection only listens: `onMessage` gets
    /// each message published on it, and `send` is not for it.
    public init(loop: EventLoop, endpoint: RedisEndpoint, timeoutMilliseconds: UInt64,
                subscribingTo channel: [UInt8]? = nil, onMessage: @escaping ([UInt8]) -> Void = { _ in },
                onReady: @escaping () -> Void, onEnded: @escaping (Failure) -> Void) {
        self.loop = loop
        self.endpoint = endpoint
        self.timeoutMilliseconds = timeoutMilliseconds
        self.onReady = onReady
        self.onEnded = onEnded
        var steps: [RedisCommand] = []
        if let password = endpoint.password {
            steps.append(RedisCommand(["AUTH"] + (endpoint.user.map { [.text($0)] } ?? []) + [.secret(password)]))
        }
        if endpoint.database != 0 { steps.append(RedisCommand(["SELECT", .integer(Int64(endpoint.database))])) }
        // A server that accepts connections but never answers must fail the opening.
        if steps.isEmpty && channel == nil { steps.append(RedisCommand(["PING"])) }
        opening = Opening(deadline: loop.nowMilliseconds + timeoutMilliseconds, steps: steps,
                          subscription: channel.map { ($0, onMessage) })
        deadlineTimer = LoopTimer(loop: loop) { [unowned self] in deadlinePassed() }
        freeTimer = LoopTimer(loop: loop) { [unowned self] in freeContext() }
        deadlineTimer.start(afterMilliseconds: timeoutMilliseconds)
        Resolver.resolve(on: loop, host: endpoint.host, port: endpoint.port) { [self] result in
            guard !ending else { return }
            switch result {
            case .success(let addresses): connect(to: addresses[0])
            case .failure(let error): end(.unreachable("cannot resolve \(endpoint.host): \(error)"))
            }
        }
    }

    /// Sends `command`; `completion` gets its reply (an error reply is a `.success(.error(…))`:
    /// the server is fine, the command was not) or why none came. False, and no completion, when
    /// the connection is not ready.
    @discardableResult
    public func send(_ command: RedisCommand, completion: @escaping (Result<RedisReply, Failure>) -> Void) -> Bool {
        guard isReady else { return false }
        return write(command, completion: completion)
    }

    /// Ends the connection now; commands under way complete with `closed`. `onEnded` is not
    /// called. Idempotent.
    public func close() {
        guard !ending else { return }
        ending = true
        isReady = false
        onEnded = nil
        onReady = nil
        scheduleFree()
    }

    // MARK: - Opening

    private func connect(to address: SocketAddress) {
        guard let context = redisAsyncConnect(address.ipString, Int32(address.port)) else {
            return end(.unreachable("cannot allocate a hiredis context"))
        }
        guard context.pointee.err == 0 else {
            let reason = Self.errorText(context)
            redisAsyncFree(context)
            return end(.unreachable("\(endpoint.host):\(endpoint.port): \(reason)"))
        }
        guard oauth_relay_redis_attach(context, loop.libuvLoop) == REDIS_OK else {
            redisAsyncFree(context)
            return end(.unreachable("cannot watch the socket on the event loop"))
        }
        self.context = context
        let retain = Unmanaged.passRetained(self)
        contextRetain = retain
        context.pointee.data = retain.toOpaque()
        redisAsyncSetConnectCallback(context, connectCallback)
        redisAsyncSetDisconnectCallback(context, disconnectCallback)
    }

    fileprivate func connected(status: Int32, context: UnsafePointer<redisAsyncContext>) {
        guard status == REDIS_OK else {
            // hiredis frees the context when this returns (rule 2).
            end(.unreachable("\(endpoint.host):\(endpoint.port): \(Self.errorText(context))"))
            return contextGone()
        }
        established = true
        // Never free here (rule 3): only commands are queued.
        nextOpeningStep()
    }

    private func nextOpeningStep() {
        guard !ending, var opening else { return }
        if !opening.steps.isEmpty {
            let step = opening.steps.removeFirst()
            self.opening = opening
            let sent = write(step) { [unowned self] result in
                switch result {
                case .success(.error(let text)): end(.refused("\(step.name): \(text)"))
                case .success: nextOpeningStep()
                case .failure(let failure): end(failure)
                }
            }
            if !sent { end(.closed("cannot send \(step.name)")) }
        } else if let subscription = opening.subscription {
            let command = RedisCommand(["SUBSCRIBE", .bytes(subscription.channel)])
            let status = Self.withTerminatedBytes(of: command) { redisAsyncFormattedCommand(context, subscriptionCallback, nil, $0, $1) }
            if status != REDIS_OK { end(.closed("cannot send SUBSCRIBE")) }
        } else {
            becomeReady()
        }
    }

    private func becomeReady() {
        opening = nil
        isReady = true
        armDeadline()
        let ready = onReady
        onReady = nil
        ready?()
    }

    // MARK: - Commands and replies

    private func write(_ command: RedisCommand, completion: @escaping (Result<RedisReply, Failure>) -> Void) -> Bool {
        guard !ending, let context else { return false }
        let retain = Unmanaged.passRetained(self)
        let status = Self.withTerminatedBytes(of: command) {
            redisAsyncFormattedCommand(context, replyCallback, retain.toOpaque(), $0, $1)
        }
        guard status == REDIS_OK else {
            retain.release()
            return false
        }
        pending.append(Pending(deadline: loop.nowMilliseconds + timeoutMilliseconds, completion: completion))
        if pending.count == 1 && opening == nil { armDeadline() }
        return true
    }

    fileprivate func replied(_ reply: UnsafePointer<redisReply>?) {
        guard !pending.isEmpty else { return }
        let completion = pending.removeFirst().completion
        if !ending { armDeadline() }
        guard let completion else { return }
        if let reply, !ending {
            completion(.success(RedisReply(reply)))
        } else {
            let reason = context.map { Self.errorText(UnsafePointer($0)) } ?? ""
            completion(.failure(.closed(reason.isEmpty ? "closed" : reason)))
        }
    }

    fileprivate func heard(_ reply: UnsafePointer<redisReply>?) {
        guard let reply, !ending, case .array(let parts) = RedisReply(reply), parts.count == 3,
              let kind = parts[0].text?.lowercased() else { return }
        switch kind {
        case "subscribe":
            if let subscription = opening?.subscription {
                subscriptionHandler = subscription.onMessage
                becomeReady()
            }
        case "message":
            if let payload = parts[2].bytes { subscriptionHandler?(payload) }
        default:
            break
        }
    }

    /// What to call with each message, once subscribed.
    private var subscriptionHandler: (([UInt8]) -> Void)?

    // MARK: - Deadlines and endings

    private func armDeadline() {
        if let opening {
            deadlineTimer.start(afterMilliseconds: opening.deadline.subtractingSaturated(loop.nowMilliseconds))
        } else if let first = pending.first {
            deadlineTimer.start(afterMilliseconds: first.deadline.subtractingSaturated(loop.nowMilliseconds))
        } else {
            deadlineTimer.stop()
        }
    }

    private func deadlinePassed() {
        guard !ending else { return }
        if opening != nil { return end(.timedOut(milliseconds: timeoutMilliseconds)) }
        guard let first = pending.first, first.deadline <= loop.nowMilliseconds else { return armDeadline() }
        let completion = first.completion
        pending[0].completion = nil
        completion?(.failure(.timedOut(milliseconds: timeoutMilliseconds)))
        end(.timedOut(milliseconds: timeoutMilliseconds))
    }

    /// The connection failed: tell the owner once, and let go of hiredis's context.
    private func end(_ failure: Failure) {
        guard !ending else { return }
        ending = true
        isReady = false
        let ended = onEnded
        onEnded = nil
        onReady = nil
        scheduleFree()
        ended?(failure)
    }

    private func scheduleFree() {
        if context != nil {
            freeTimer.start(afterMilliseconds: 0)
        } else {
            closeTimers()
        }
    }

    private func freeContext() {
        // The free may drop the last reference (the context's): self stays until this returns.
        withExtendedLifetime(self) {
            if let context {
                // Runs the pending callbacks (nil replies) and, once connected, the disconnect callback.
                redisAsyncFree(context)
            }
            if context != nil { contextGone() }
        }
    }

    fileprivate func disconnected(context: UnsafePointer<redisAsyncContext>) {
        let reason = Self.errorText(context)
        end(.closed(reason.isEmpty ? "closed by the server" : reason))
        contextGone()
    }

    /// hiredis frees (or has freed) the context: drop the retain of rule 1, timers first (rule 5).
    private func contextGone() {
        context = nil
        ending = true
        isReady = false
        closeTimers()
        let retain = contextRetain
        contextRetain = nil
        retain?.release()
    }

    private func closeTimers() {
        deadlineTimer.close()
        freeTimer.close()
    }

    /// Calls `body` with the command's RESP bytes and their count, followed by a NUL that the
    /// count leaves out. hiredis needs that NUL although it takes a length: to tell a SUBSCRIBE
    /// and its channels from other commands it scans the bytes with `strchr`, which without it
    /// runs past the end of the buffer (AddressSanitizer showed the over-read, and a `$` found
    /// beyond the buffer would be taken for one more channel).
    private static func withTerminatedBytes(of command: RedisCommand, _ body: (UnsafePointer<CChar>, Int) -> Int32) -> Int32 {
        var bytes = command.encoded
        let count = bytes.count
        bytes.append(0)
        return bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { body($0.baseAddress!, count) }
        }
    }

    private static func errorText(_ context: UnsafePointer<redisAsyncContext>) -> String {
        withUnsafeBytes(of: context.pointee.c.errstr) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
    }
}

// MARK: - hiredis callbacks (rule 1: the connection is recovered from `data` or privdata)

private func connection(of context: UnsafePointer<redisAsyncContext>) -> RedisConnection? {
    context.pointee.data.map { Unmanaged<RedisConnection>.fromOpaque($0).takeUnretainedValue() }
}

private let connectCallback: @convention(c) (UnsafePointer<redisAsyncContext>?, Int32) -> Void = { context, status in
    guard let context, let owner = connection(of: context) else { return }
    // The call may release the context's retain, the last reference.
    withExtendedLifetime(owner) { owner.connected(status: status, context: context) }
}

private let disconnectCallback: @convention(c) (UnsafePointer<redisAsyncContext>?, Int32) -> Void = { context, _ in
    guard let context, let owner = connection(of: context) else { return }
    withExtendedLifetime(owner) { owner.disconnected(context: context) }
}

private let replyCallback: @convention(c) (UnsafeMutablePointer<redisAsyncContext>?, UnsafeMutableRawPointer?,
                                          UnsafeMutableRawPointer?) -> Void = { _, reply, privdata in
    guard let privdata else { return }
    let owner = Unmanaged<RedisConnection>.fromOpaque(privdata).takeRetainedValue()
    owner.replied(reply.map { UnsafePointer($0.assumingMemoryBound(to: redisReply.self)) })
}

private let subscriptionCallback: @convention(c) (UnsafeMutablePointer<redisAsyncContext>?, UnsafeMutableRawPointer?,
                                                 UnsafeMutableRawPointer?) -> Void = { context, reply, _ in
    guard let context, let owner = connection(of: context) else { return }
    withExtendedLifetime(owner) { owner.heard(reply.map { UnsafePointer($0.assumingMemoryBound(to: redisReply.self)) }) }
}

extension UInt64 {
    fileprivate func subtractingSaturated(_ other: UInt64) -> UInt64 {
        self > other ? self - other : 0
    }
}
