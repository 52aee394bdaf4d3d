// TokenService: the token thread. It owns one loop that sends every token request (through
// HTTPClient), arms each identity's refresh timer, and wakes the worker loops waiting for a
// result. Fetching happens here and only here, so "one fetch in flight per identity" holds
// across all workers; the lifecycle additionally refuses to start a second one.
//
// A reload hands the service a new configuration's identities (`replace`): identities whose
// settings did not change keep their state and token; the others start afresh. A replaced or
// removed identity is retired: it fetches only while requests that began before the reload
// still wait for it, and its refresh timer stops.

import Config
import EventLoop
import Foundation
import HTTPClient
import Logging
import OAuth2
import Synchronization
import TLS

/// How a token request ended, as counted by `oauth_relay_token_requests_total{outcome}`.
public enum TokenRequestOutcome: String, Sendable {
    case success
    /// The token endpoint said no for good (an OAuth error such as `invalid_grant`, a redirect,
    /// an unreadable answer): retried only after backoff or a configuration change.
    case refused
    /// The token endpoint could not answer now (unreachable, timed out, 5xx, 429).
    case unavailable

    init(_ error: TokenEndpointError) {
        self = error.isTemporary ? .unavailable : .refused
    }
}

/// Told about token requests and expiry changes (the metrics). Called on the token thread,
/// except `tokenExpiryChanged` and `upstreamRefusedToken`, which may come from any thread.
public protocol TokenObserver: Sendable {
    func tokenRequestEnded(identity: String, outcome: TokenRequestOutcome)
    /// The identity's token now expires at `unixTime`, or it has none (nil).
    func tokenExpiryChanged(identity: String, unixTime: Double?)
    /// The identity is no longer configured.
    func identityRemoved(_ name: String)
    /// An upstream refused the identity's token (a `retryOnStatus` answer), and the relay
    /// dropped it to fetch another (`refetch`) or kept it and let the answer through.
    func upstreamRefusedToken(identity: String, refetch: Bool)
}

extension TokenObserver {
    public func upstreamRefusedToken(identity: String, refetch: Bool) {}
}

/// What `TokenService.replace` did, by identity name.
public struct TokenSetChange: Sendable {
    public let set: TokenSet
    /// Same settings: state and token kept.
    public let kept: [String]
    /// New or changed settings: a new token will be fetched.
    public let started: [String]
    public let removed: [String]
}

public final class TokenService: Sendable {
    private let current = Mutex(TokenSet([]))
    private let nextSlot = Atomic<Int>(0)
    /// The identity set and TLS configurations the token loop has yet to adopt.
    private let updates: FetcherMailbox
    private let thread: WorkerThread
    /// Wakes the token loop: something was asked of it (a fetch, an invalidation, stop).
    private let wakeup: LoopWakeup
    private let stopFlag: StopFlag
    private let observer: (any TokenObserver)?

    /// Starts the token thread and, in the background, the first fetch of every identity that
    /// needs no person to log in.
    /// `tls`: the TLS configuration of each identity whose token endpoint is https.
    public static func start(identities: [String: Identity], tls: [String: TLSConfiguration] = [:],
                             limits: HTTPClientLimits, logger: Logger,
                             observer: (any TokenObserver)? = nil) throws -> TokenService {
        let stopFlag = StopFlag()
        let updates = FetcherMailbox()
        let (thread, outcome) = WorkerThread.start { (report: (Result<LoopWakeup, any Error>) -> Void) in
            let loop: EventLoop
            do {
                loop = try EventLoop()
            } catch {
                report(.failure(error))
                return
            }
            let fetcher = TokenFetcher(loop: loop, limits: limits, logger: logger, stopFlag: stopFlag, updates: updates,
                                       observer: observer)
            report(.success(fetcher.wakeup))
            loop.run()
            try? loop.close()
        }
        let service: TokenService
        switch outcome {
        case .success(let wakeup):
            service = TokenService(thread: thread, wakeup: wakeup, stopFlag: stopFlag, updates: updates, observer: observer)
        case .failure(let error):
            thread.join()
            throw error
        }
        service.replace(identities: identities, tls: tls, limits: limits)
        return service
    }

    private init(thread: WorkerThread, wakeup: LoopWakeup, stopFlag: StopFlag, updates: FetcherMailbox,
                 observer: (any TokenObserver)?) {
        self.thread = thread
        self.updates = updates
        self.wakeup = wakeup
        self.stopFlag = stopFlag
        self.observer = observer
    }

    /// The identities in force, sorted by name.
    public var identities: [IdentityTokens] { current.withLock { $0.identities } }

    public var tokenSet: TokenSet { current.withLock { $0 } }

    /// Puts a configuration's identities in force for new requests. An identity whose settings
    /// equal those in force keeps its state (its token stays, no token request is made); new
    /// and changed ones get a fresh state and fetch at once. `tls` and `limits` apply to every
    /// token request from now on. Call from one thread at a time.
    @discardableResult
    public func replace(identities: [String: Identity], tls: [String: TLSConfiguration],
                        limits: HTTPClientLimits) -> TokenSetChange {
        let old = tokenSet
        var kept: [String] = [], started: [String] = []
        var fresh: [IdentityTokens] = []
        for name in identities.keys.sorted() {
            let identity = identities[name]!
            if let existing = old[name], existing.identity == identity {
                fresh.append(existing)
                kept.append(name)
            } else {
                fresh.append(IdentityTokens(identity: identity, slot: nextSlot.add(1, ordering: .relaxed).oldValue))
                started.append(name)
            }
        }
        let removed = old.identities.map(\.identity.name).filter { identities[$0] == nil }
        // A changed identity's old token is no longer injected: its expiry reads 0 until the new one.
        let replaced = started.filter { old[$0] != nil }
        let set = TokenSet(fresh)
        var tlsBySlot: [Int: TLSConfiguration] = [:]
        for tokens in fresh { tlsBySlot[tokens.slot] = tls[tokens.identity.name] }
        // The token loop adopts the set before it handles any wake-up a worker sends for it:
        // the update is stored before the set is published.
        updates.post(FetcherUpdate(identities: fresh, tls: tlsBySlot, limits: limits))
        current.withLock { $0 = set }
        for name in replaced { observer?.tokenExpiryChanged(identity: name, unixTime: nil) }
        for name in removed { observer?.identityRemoved(name) }
        if !stopFlag.isSet { wakeup.wake() }
        return TokenSetChange(set: set, kept: kept, started: started, removed: removed)
    }

    /// A worker has requests waiting for `tokens` (their wake-ups are registered by
    /// `IdentityTokens.decide`): make sure a fetch is under way. Thread-safe.
    public func needToken(_ tokens: IdentityTokens) {
        // Named to the token loop: it may be an identity a reload retired, which the loop no
        // longer looks at unless asked.
        updates.ask(tokens)
        if !stopFlag.isSet { wakeup.wake() }
    }

    /// An upstream refused `token` (a `retryOnStatus` status) at `now` on a route whose
    /// `minTokenAgeForRetrySeconds` is `minimumAge`: drop it if it is still the current one and
    /// may be dropped, and fetch anew (see `TokenLifecycle.refused`). Thread-safe.
    public func refused(_ tokens: IdentityTokens, token: String, at now: Double, minimumAge: Double) -> TokenLifecycle.Refusal {
        var refusal = TokenLifecycle.Refusal.superseded
        tokens.publish { lifecycle in
            refusal = lifecycle.refused(token: token, at: now, minimumAge: minimumAge)
            return refusal == .dropped
        }
        switch refusal {
        case .dropped:
            observer?.upstreamRefusedToken(identity: tokens.identity.name, refetch: true)
            observer?.tokenExpiryChanged(identity: tokens.identity.name, unixTime: nil)
            if !stopFlag.isSet { wakeup.wake() }
        case .kept:
            observer?.upstreamRefusedToken(identity: tokens.identity.name, refetch: false)
        case .superseded:
            break
        }
        return refusal
    }

    /// Fetches a new token for `tokens` now (the current one stays in use meanwhile).
    /// Thread-safe.
    public func refreshNow(_ tokens: IdentityTokens) {
        tokens.update { $0.refreshNow() }
        if !stopFlag.isSet { wakeup.wake() }
    }

    /// Forgets the token and refresh token of `tokens`. Thread-safe.
    public func forget(_ tokens: IdentityTokens) {
        tokens.publish { lifecycle in
            lifecycle.forget()
            return true
        }
        observer?.tokenExpiryChanged(identity: tokens.identity.name, unixTime: nil)
        if !stopFlag.isSet { wakeup.wake() }
    }

    /// Stops the token thread; token requests in flight are abandoned. Effective once.
    public func stop() {
        guard stopFlag.set() else { return }
        wakeup.wake()
        thread.join()
    }
}

/// A new identity set for the token loop, with the TLS configuration of each https token
/// endpoint by slot.
struct FetcherUpdate: Sendable {
    let identities: [IdentityTokens]
    let tls: [Int: TLSConfiguration]
    let limits: HTTPClientLimits
}

/// Hands identity sets to the token loop, in order: each one is adopted, even when two reloads
/// come before the loop wakes, so that an identity only the first one had still fetches for
/// the requests that began under it.
final class FetcherMailbox: Sendable {
    private let pending = Mutex<[FetcherUpdate]>([])
    /// Identities requests wait for, since the loop last looked.
    private let asked = Mutex<[IdentityTokens]>([])

    func ask(_ tokens: IdentityTokens) {
        asked.withLock { list in
            if !list.contains(where: { $0 === tokens }) { list.append(tokens) }
        }
    }

    func takeAsked() -> [IdentityTokens] {
        asked.withLock { list in
            defer { list.removeAll() }
            return list
        }
    }

    func post(_ update: FetcherUpdate) { pending.withLock { $0.append(update) } }

    func takeAll() -> [FetcherUpdate] {
        pending.withLock { updates in
            defer { updates.removeAll() }
            return updates
        }
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
    private var limits: HTTPClientLimits
    let logger: Logger
    let stopFlag: StopFlag
    let updates: FetcherMailbox
    let observer: (any TokenObserver)?
    private(set) var wakeup: LoopWakeup!
    /// The identities in force.
    private var identities: [IdentityTokens] = []
    /// Identities a reload replaced or removed; kept while requests still wait for them.
    private var retired: [IdentityTokens] = []
    private var tls: [Int: TLSConfiguration] = [:]
    /// Refresh timers, by slot, of the identities in force.
    private var timers: [Int: LoopTimer] = [:]
    /// Token requests under way, by slot, so stopping can abandon them.
    private var inFlight: [Int: HTTPClientCall] = [:]
    private var stopping = false

    init(loop: EventLoop, limits: HTTPClientLimits, logger: Logger, stopFlag: StopFlag, updates: FetcherMailbox,
         observer: (any TokenObserver)?) {
        self.loop = loop
        self.updates = updates
        self.limits = limits
        self.logger = logger
        self.stopFlag = stopFlag
        self.observer = observer
        wakeup = LoopWakeup(loop: loop) { [unowned self] in self.woken() }
    }

    private func woken() {
        if stopFlag.isSet {
            stop()
            return
        }
        for update in updates.takeAll() { adopt(update) }
        // A request that began before a reload may wait for an identity retired since.
        for tokens in updates.takeAsked() where !isInForce(tokens) && !retired.contains(where: { $0 === tokens }) {
            retired.append(tokens)
        }
        for tokens in identities { runDueFetch(tokens) }
        for tokens in retired { runDueFetch(tokens) }
        // A retired identity goes once nothing waits for it and its last request ended.
        retired.removeAll { !$0.hasWaiters && inFlight[$0.slot] == nil }
    }

    private func adopt(_ update: FetcherUpdate) {
        let inForce = Set(update.identities.map(\.slot))
        for tokens in identities where !inForce.contains(tokens.slot) {
            timers.removeValue(forKey: tokens.slot)?.close()
            retired.append(tokens)
        }
        for tokens in update.identities where timers[tokens.slot] == nil {
            timers[tokens.slot] = LoopTimer(loop: loop) { [unowned self] in self.runDueFetch(tokens) }
        }
        // Retired identities keep the TLS configuration they fetched with.
        for (slot, configuration) in update.tls { tls[slot] = configuration }
        identities = update.identities
        limits = update.limits
    }

    private func isInForce(_ tokens: IdentityTokens) -> Bool { timers[tokens.slot] != nil }

    private func runDueFetch(_ tokens: IdentityTokens) {
        guard !stopping else { return }
        // A retired identity fetches only for requests that still wait for it.
        guard isInForce(tokens) || tokens.hasWaiters else { return }
        let now = monotonicSeconds()
        let request = tokens.update { $0.startFetchIfDue(at: now) }
        if let request {
            send(request, for: tokens)
        } else {
            schedule(tokens, now: now)
        }
    }

    private func schedule(_ tokens: IdentityTokens, now: Double) {
        guard let timer = timers[tokens.slot] else { return }
        guard let due = tokens.update({ $0.nextFetchAt(after: now) }) else {
            timer.stop()
            return
        }
        timer.start(afterMilliseconds: UInt64(max(0, (due - now) * 1000).rounded(.up)))
    }

    private func send(_ request: TokenRequest, for tokens: IdentityTokens) {
        let url = request.url
        let name = tokens.identity.name
        let tls = url.scheme == .https ? self.tls[tokens.slot] : nil
        if url.scheme == .https && tls == nil {
            finish(tokens, .failure(.unreachable(reason: "no TLS configuration for the https token endpoint")))
            return
        }
        logger.debug("token request", metadata: ["identity": .string(name), "purpose": .string("\(request.purpose)")])
        let httpRequest = HTTPClientRequest(method: request.method, host: url.host, port: url.port, target: url.requestTarget,
                                            headers: request.headers.map { HTTPField($0.name, $0.value) }, body: request.body,
                                            tls: tls)
        let started = monotonicSeconds()
        inFlight[tokens.slot] = sendHTTPRequest(httpRequest, on: loop, limits: limits) { [self] result in
            inFlight[tokens.slot] = nil
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
        let name = tokens.identity.name
        // The result and the wake-up of the requests waiting for it, in one step.
        tokens.publish { lifecycle in
            switch outcome {
            case .success(let response): lifecycle.fetchSucceeded(response, at: now)
            case .failure(let error): lifecycle.fetchFailed(error, at: now)
            }
            return true
        }
        switch outcome {
        case .success(let response):
            logger.info("token obtained", metadata: ["identity": .string(name),
                                                     "expires_in": .stringConvertible(Int(response.expiresIn)),
                                                     "expiry_from": .string(response.expirySource.rawValue)])
            observer?.tokenRequestEnded(identity: name, outcome: .success)
            if isInForce(tokens) {
                observer?.tokenExpiryChanged(identity: name, unixTime: Date().timeIntervalSince1970 + response.expiresIn)
            }
        case .failure(let error):
            logger.warning("token request failed", metadata: ["identity": .string(name),
                                                              "error": .string("\(error)")])
            observer?.tokenRequestEnded(identity: name, outcome: TokenRequestOutcome(error))
        }
        runDueFetch(tokens)
    }

    private func stop() {
        stopping = true
        for call in inFlight.values { call.cancel() }
        inFlight.removeAll()
        for timer in timers.values { timer.close() }
        timers.removeAll()
        wakeup.close()
    }
}
