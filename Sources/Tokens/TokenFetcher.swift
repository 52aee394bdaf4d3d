// TokenFetcher: the token thread's side of the token service. It runs on the token loop only:
// it adopts identity sets, sends each due token request (through HTTPClient), records results
// (waking the requests that waited for them, see IdentityTokens.swift) and arms refresh timers.

import Config
import EventLoop
import Foundation
import HTTPClient
import Logging
import OAuth2
import TLS

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
    private var lifetimeWarnings = LifetimeWarningMemory()
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
            lifetimeWarnings.forget(slot: tokens.slot)
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
            warnAboutLifetime(response.lifetimeWarnings, of: tokens)
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

    /// One warning line naming the identity and the fields whose lifetime was adjusted (never a
    /// value: a hostile answer may put anything there).
    private func warnAboutLifetime(_ warnings: [LifetimeWarning], of tokens: IdentityTokens) {
        let news = lifetimeWarnings.toLog(warnings, slot: tokens.slot)
        guard !news.isEmpty else { return }
        var fields: [String] = []
        for field in news.map(\.field) where !fields.contains(field) { fields.append(field) }
        logger.warning("token lifetime adjusted", metadata: [
            "identity": .string(tokens.identity.name),
            "field": .string(fields.joined(separator: ", ")),
            "detail": .string(news.map(\.description).joined(separator: "; ")),
        ])
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
