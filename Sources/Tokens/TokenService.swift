// TokenService: the token thread. It owns one loop that sends every token request (through
// HTTPClient), arms each identity's refresh timer, and wakes the worker loops waiting for a
// result. Fetching happens here and only here, so "one fetch in flight per identity" holds
// across all workers; the lifecycle additionally refuses to start a second one.

import Config
import EventLoop
import Foundation
import HTTPClient
import Logging
import OAuth2
import Synchronization
import TLS

public final class TokenService: Sendable {
    public let identities: [IdentityTokens]
    private let byName: [String: Int]
    private let thread: WorkerThread
    /// Wakes the token loop: something was asked of it (a fetch, an invalidation, stop).
    private let wakeup: LoopWakeup
    private let stopFlag: StopFlag

    /// Starts the token thread and, in the background, the first fetch of every identity that
    /// needs no person to log in.
    /// `tls`: the TLS configuration of each identity whose token endpoint is https.
    public static func start(identities: [String: Identity], tls: [String: TLSConfiguration] = [:],
                             limits: HTTPClientLimits, logger: Logger) throws -> TokenService {
        let names = identities.keys.sorted()
        let tokens = names.enumerated().map { IdentityTokens(identity: identities[$1]!, index: $0) }
        let stopFlag = StopFlag()
        let (thread, outcome) = WorkerThread.start { (report: (Result<LoopWakeup, any Error>) -> Void) in
            let loop: EventLoop
            do {
                loop = try EventLoop()
            } catch {
                report(.failure(error))
                return
            }
            let fetcher = TokenFetcher(loop: loop, identities: tokens, tls: tls, limits: limits, logger: logger, stopFlag: stopFlag)
            report(.success(fetcher.wakeup))
            fetcher.runDueFetches()
            loop.run()
            try? loop.close()
        }
        let wakeup: LoopWakeup
        switch outcome {
        case .success(let started): wakeup = started
        case .failure(let error):
            thread.join()
            throw error
        }
        return TokenService(identities: tokens, thread: thread, wakeup: wakeup, stopFlag: stopFlag,
                            byName: Dictionary(uniqueKeysWithValues: names.enumerated().map { ($1, $0) }))
    }

    private init(identities: [IdentityTokens], thread: WorkerThread, wakeup: LoopWakeup, stopFlag: StopFlag,
                 byName: [String: Int]) {
        self.identities = identities
        self.thread = thread
        self.wakeup = wakeup
        self.stopFlag = stopFlag
        self.byName = byName
    }

    public func index(of name: String) -> Int? { byName[name] }

    /// A worker has requests waiting for identity `index`: wake `loop` when the next fetch ends,
    /// and make sure one is under way. Thread-safe.
    public func needToken(_ index: Int, wake loop: LoopWakeup) {
        identities[index].waiting.withLock { list in
            if !list.contains(where: { $0 === loop }) { list.append(loop) }
        }
        if !stopFlag.isSet { wakeup.wake() }
    }

    /// An upstream refused `token` (a `retryOnStatus` status): drop it if it is still the
    /// current one, and fetch anew. Thread-safe.
    public func invalidate(_ index: Int, token: String) {
        let dropped = identities[index].lifecycle.withLock { $0.invalidate(token: token) }
        if dropped {
            identities[index].publish()
            if !stopFlag.isSet { wakeup.wake() }
        }
    }

    /// Fetches a new token for identity `index` now (the current one stays in use meanwhile).
    /// Thread-safe.
    public func refreshNow(_ index: Int) {
        identities[index].lifecycle.withLock { $0.refreshNow() }
        if !stopFlag.isSet { wakeup.wake() }
    }

    /// Forgets identity `index`'s token and refresh token. Thread-safe.
    public func forget(_ index: Int) {
        identities[index].lifecycle.withLock { $0.forget() }
        identities[index].publish()
        if !stopFlag.isSet { wakeup.wake() }
    }

    /// Stops the token thread; token requests in flight are abandoned. Effective once.
    public func stop() {
        guard stopFlag.set() else { return }
        wakeup.wake()
        thread.join()
    }
}

/// Set once by `TokenService.stop()`, read by the token loop when woken.
final class StopFlag: Sendable {
    private let value = Atomic<Bool>(false)
    var isSet: Bool { value.load(ordering: .acquiring) }
    /// Returns true for the call that set it.
    func set() -> Bool { !value.exchange(true, ordering: .acquiringAndReleasing) }
}

/// Runs on the token loop only.
final class TokenFetcher {
    let loop: EventLoop
    let identities: [IdentityTokens]
    let tls: [String: TLSConfiguration]
    let limits: HTTPClientLimits
    let logger: Logger
    let stopFlag: StopFlag
    private(set) var wakeup: LoopWakeup!
    private var timers: [LoopTimer] = []
    /// Token requests under way, by identity index, so stopping can abandon them.
    private var inFlight: [Int: HTTPClientCall] = [:]
    private var stopping = false

    init(loop: EventLoop, identities: [IdentityTokens], tls: [String: TLSConfiguration], limits: HTTPClientLimits,
         logger: Logger, stopFlag: StopFlag) {
        self.loop = loop
        self.identities = identities
        self.tls = tls
        self.limits = limits
        self.logger = logger
        self.stopFlag = stopFlag
        wakeup = LoopWakeup(loop: loop) { [unowned self] in self.woken() }
        timers = identities.map { tokens in
            LoopTimer(loop: loop) { [unowned self] in self.runDueFetch(tokens) }
        }
    }

    private func woken() {
        if stopFlag.isSet {
            stop()
            return
        }
        runDueFetches()
    }

    func runDueFetches() {
        for tokens in identities { runDueFetch(tokens) }
    }

    private func runDueFetch(_ tokens: IdentityTokens) {
        guard !stopping else { return }
        let now = monotonicSeconds()
        let request = tokens.lifecycle.withLock { $0.startFetchIfDue(at: now) }
        if let request {
            send(request, for: tokens)
        } else {
            schedule(tokens, now: now)
        }
    }

    private func schedule(_ tokens: IdentityTokens, now: Double) {
        let timer = timers[tokens.index]
        guard let due = tokens.lifecycle.withLock({ $0.nextFetchAt(after: now) }) else {
            timer.stop()
            return
        }
        timer.start(afterMilliseconds: UInt64(max(0, (due - now) * 1000).rounded(.up)))
    }

    private func send(_ request: TokenRequest, for tokens: IdentityTokens) {
        let url = request.url
        let name = tokens.identity.name
        let tls = url.scheme == .https ? self.tls[name] : nil
        if url.scheme == .https && tls == nil {
            finish(tokens, .failure(.unreachable(reason: "no TLS configuration for the https token endpoint")))
            return
        }
        logger.debug("token request", metadata: ["identity": .string(name), "purpose": .string("\(request.purpose)")])
        let httpRequest = HTTPClientRequest(method: request.method, host: url.host, port: url.port, target: url.requestTarget,
                                            headers: request.headers.map { HTTPField($0.name, $0.value) }, body: request.body,
                                            tls: tls)
        let started = monotonicSeconds()
        inFlight[tokens.index] = sendHTTPRequest(httpRequest, on: loop, limits: limits) { [self] result in
            inFlight[tokens.index] = nil
            guard !stopping else { return }
            switch result {
            case .success(let response):
                let reply = TokenEndpointReply(status: response.status,
                                               headers: response.headers.map { HeaderField(name: $0.name, value: $0.value) },
                                               body: response.body)
                do throws(TokenEndpointError) {
                    let parsed = try request.parseResponse(reply, unixTime: Date().timeIntervalSince1970)
                    finish(tokens, .success(parsed))
                } catch {
                    finish(tokens, .failure(error))
                }
            case .failure(.responseTimeout), .failure(.connectTimeout):
                finish(tokens, .failure(.timedOut(seconds: monotonicSeconds() - started)))
            case .failure(let error):
                finish(tokens, .failure(.unreachable(reason: error.description)))
            }
        }
    }

    private func finish(_ tokens: IdentityTokens, _ outcome: Result<TokenResponse, TokenEndpointError>) {
        let now = monotonicSeconds()
        switch outcome {
        case .success(let response):
            tokens.lifecycle.withLock { $0.fetchSucceeded(response, at: now) }
            logger.info("token obtained", metadata: ["identity": .string(tokens.identity.name),
                                                     "expires_in": .stringConvertible(Int(response.expiresIn)),
                                                     "expiry_from": .string(response.expirySource.rawValue)])
        case .failure(let error):
            tokens.lifecycle.withLock { $0.fetchFailed(error, at: now) }
            logger.warning("token request failed", metadata: ["identity": .string(tokens.identity.name),
                                                              "error": .string("\(error)")])
        }
        tokens.publish()
        runDueFetch(tokens)
    }

    private func stop() {
        stopping = true
        for call in inFlight.values { call.cancel() }
        inFlight.removeAll()
        for timer in timers { timer.close() }
        timers.removeAll()
        wakeup.close()
    }
}
