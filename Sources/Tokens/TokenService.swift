// TokenService: the token thread. It owns one loop that sends every token request (through
// HTTPClient), arms each identity's refresh timer, and wakes the worker loops waiting for a
// result. Fetching happens here and only here, so "one fetch in flight per identity" holds
// across all workers; the lifecycle additionally refuses to start a second one. Everything
// this service is asked from other threads reaches the token loop as a message in its inbox
// (TokenInbox.swift), handled in order by `TokenFetcher.handle`.
//
// A reload hands the service a new configuration's identities (`replace`): identities whose
// settings did not change keep their state and token; the others start afresh. A replaced or
// removed identity is retired: it fetches only while requests that began before the reload
// still wait for it, and its refresh timer stops.

import Endpoints
import EventLoop
import HTTPClient
import Logging
import OAuth2
import Locking
import SafeText
import Synchronization
import TLS
import TokenStore

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
    private let current = Locked(TokenSet([]))
    private let nextSlot = Atomic<Int>(0)
    /// Every piece of work for the token loop goes through it.
    private let inbox: TokenInbox
    private let thread: WorkerThread
    private let stopped = Atomic<Bool>(false)
    private let observer: (any TokenObserver)?
    /// The browser logins in flight, and their callbacks.
    public let logins: LoginDesk
    /// A token store keeps logins: a new interactive identity waits for its entry to be read.
    private let hasStore: Bool
    /// The inbound issuers' keys routes use now, weakly: the settings that use them keep them.
    private let inboundKeySets = Locked<[HeldInboundKeys]>([])

    /// Starts the token thread and, in the background, the first fetch of every identity that
    /// needs no person to log in.
    /// `tls`: the TLS configuration of each identity whose token endpoint is https;
    /// `resourceTLS`: of each `auto` identity whose resource is https. `registersClients`: false
    /// when an `auto` identity's resolution must stop where it would register a client (a
    /// command that only reads, such as an offline logout).
    public static func start(identities: [String: Identity], tls: [String: TLSConfiguration] = [:],
                             resourceTLS: [String: TLSConfiguration] = [:], limits: HTTPClientLimits, logger: Logger,
                             observer: (any TokenObserver)? = nil, store: TokenStore? = nil,
                             sharedStore: SharedStoreSettings? = nil, registersClients: Bool = true) throws -> TokenService {
        let (thread, outcome) = WorkerThread.start { (report: (Result<TokenInbox, any Error>) -> Void) in
            let loop: EventLoop
            do {
                loop = try EventLoop()
            } catch {
                report(.failure(error))
                return
            }
            let fetcher = TokenFetcher(loop: loop, limits: limits, logger: logger, observer: observer, store: store,
                                       sharedStore: sharedStore, registersClients: registersClients)
            report(.success(fetcher.inbox))
            loop.run()
            try? loop.close()
        }
        let service: TokenService
        switch outcome {
        case .success(let inbox):
            service = TokenService(thread: thread, inbox: inbox, observer: observer, hasStore: store != nil || sharedStore != nil)
        case .failure(let error):
            thread.join()
            throw error
        }
        service.replace(identities: identities, tls: tls, resourceTLS: resourceTLS, limits: limits)
        return service
    }

    private init(thread: WorkerThread, inbox: TokenInbox, observer: (any TokenObserver)?, hasStore: Bool) {
        self.hasStore = hasStore
        self.thread = thread
        self.inbox = inbox
        self.observer = observer
        logins = LoginDesk(inbox: inbox, observer: observer)
    }

    /// The identities in force, sorted by name.
    public var identities: [IdentityTokens] { current.withLock { $0.identities } }

    public var tokenSet: TokenSet { current.withLock { $0 } }

    /// Puts a configuration's identities in force for new requests. An identity whose settings
    /// equal those in force keeps its state (its token stays, no token request is made), even
    /// when a credential file it reads again by itself was rotated meanwhile
    /// (`Identity.hasSameSettings`); new and changed ones get a fresh state and fetch at once. `tls` and `limits` apply to every
    /// token request from now on; `resourceTLS` to the requests of `auto` identities to their
    /// resource, by identity name. Call from one thread at a time.
    @discardableResult
    public func replace(identities: [String: Identity], tls: [String: TLSConfiguration],
                        resourceTLS: [String: TLSConfiguration] = [:], limits: HTTPClientLimits) -> TokenSetChange {
        let old = tokenSet
        var kept: [String] = [], started: [String] = []
        var fresh: [IdentityTokens] = []
        let names = identities.keys.sorted()
        let keeping = Set(names.filter { name in old[name].map { $0.configured.hasSameSettings(as: identities[name]!) } ?? false })
        var cacheIndexes = CacheIndexes.free(count: names.count - keeping.count, taken: Set(keeping.map { old[$0]!.cacheIndex }))[...]
        for name in names {
            let identity = identities[name]!
            if keeping.contains(name), let existing = old[name] {
                fresh.append(existing)
                kept.append(name)
            } else {
                let tokens = IdentityTokens(identity: identity, slot: nextSlot.add(1, ordering: .relaxed).oldValue,
                                            cacheIndex: cacheIndexes.removeFirst())
                // An `auto` identity's entry is read once it has learnt its client (the entry's
                // settings include it): AutoResolver.
                if hasStore && identity.grant.isInteractive && identity.auto == nil { tokens.update { $0.awaitStoredLogin() } }
                fresh.append(tokens)
                started.append(name)
            }
        }
        let removed = old.identities.map(\.configured.name).filter { identities[$0] == nil }
        // A changed identity's old token is no longer injected: its expiry reads 0 until the new one.
        let replaced = started.filter { old[$0] != nil }
        // Logins in flight for an identity removed, or changed in what they depend on, end before
        // the new set is published: no callback completes one against the new settings.
        for name in removed { logins.cancel(identity: name) }
        for name in replaced where !PendingLogins.loginCarriesOver(from: old[name]!.configured, to: identities[name]!) {
            logins.cancel(identity: name)
        }
        let set = TokenSet(fresh)
        var tlsBySlot: [Int: TLSConfiguration] = [:], resourceTLSBySlot: [Int: TLSConfiguration] = [:]
        for tokens in fresh {
            tlsBySlot[tokens.slot] = tls[tokens.configured.name]
            resourceTLSBySlot[tokens.slot] = resourceTLS[tokens.configured.name]
        }
        // The token loop adopts the set before it handles any message a worker posts for it:
        // the inbox keeps order, and the update is posted before the set is published.
        inbox.post(.adopt(FetcherUpdate(identities: fresh, tls: tlsBySlot, resourceTLS: resourceTLSBySlot, limits: limits)))
        current.withLock { $0 = set }
        for name in replaced { observer?.tokenExpiryChanged(identity: name, unixTime: nil) }
        for name in removed { observer?.identityRemoved(name) }
        return TokenSetChange(set: set, kept: kept, started: started, removed: removed)
    }

    /// A worker has requests waiting for `tokens` (their wake-ups are registered by
    /// `IdentityTokens.decide`): make sure a fetch is under way. Thread-safe.
    public func needToken(_ tokens: IdentityTokens) {
        // Named to the token loop: it may be an identity a reload retired, which the loop no
        // longer looks at unless asked.
        inbox.post(.needToken(tokens))
    }

    /// A worker's lookup of a caller's token began its exchange (`CallerTokens.Lookup.wait`
    /// with `exchange`): the token thread sends it and publishes the outcome into the identity's
    /// per-caller cache. Thread-safe.
    public func exchangeForCaller(_ tokens: IdentityTokens, _ exchange: CallerExchange) {
        inbox.post(.exchangeForCaller(tokens, exchange))
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
            inbox.post(.reconsider(tokens))
        case .kept:
            observer?.upstreamRefusedToken(identity: tokens.identity.name, refetch: false)
        case .superseded:
            break
        }
        return refusal
    }

    /// An upstream answered the identity's token with a challenge asking for `stepUp` (more
    /// scope, a stronger or fresher authentication) at `now`: see `TokenLifecycle.stepUp`. When
    /// a login is needed, waiting requests hear of it (they get the login problem), and a device
    /// identity's login starts with the next request. `token`: the token the upstream answered
    /// (see `TokenLifecycle.stepUp`). Thread-safe.
    public func stepUp(_ tokens: IdentityTokens, _ stepUp: StepUp, token: String? = nil, at now: Double) -> StepUpOutcome {
        reportStepUp(tokens, stepUp, token: token, at: now).outcome
    }

    /// A worker declined `tokens`' step-up challenge again by itself (the identity declined the
    /// same one to the same token before): counted like any declined one, without the lock.
    public func stepUpDeclinedAgain(_ tokens: IdentityTokens) {
        observer?.upstreamAskedForStepUp(identity: tokens.configured.name, outcome: .declined)
    }

    /// `stepUp`, saying too whether the identity's pending step-up changed (a new one, or a
    /// wider one): what is worth a log line. Thread-safe.
    public func reportStepUp(_ tokens: IdentityTokens, _ stepUp: StepUp, token: String? = nil,
                             at now: Double) -> (outcome: StepUpOutcome, pendingChanged: Bool) {
        var outcome = StepUpOutcome.alreadyGranted
        var changed = false
        tokens.publish { lifecycle in
            let before = lifecycle.pendingStepUp(at: now)
            outcome = lifecycle.stepUp(stepUp, token: token, at: now)
            guard case .loginNeeded = outcome else { return false }
            changed = lifecycle.pendingStepUp(at: now) != before
            return true
        }
        observer?.upstreamAskedForStepUp(identity: tokens.configured.name, outcome: outcome)
        return (outcome, changed)
    }

    /// An upstream refused `token`, issued on behalf of the caller whose token has `key`, at
    /// `now` on a route whose `minTokenAgeForRetrySeconds` is `minimumAge`: that caller's entry is
    /// dropped unless kept (`CallerCache.refused`). Thread-safe.
    public func refusedCallerToken(_ tokens: IdentityTokens, key: CallerKey, token: String, at now: Double,
                                   minimumAge: Double) -> TokenLifecycle.Refusal {
        let refusal = tokens.callers?.refused(key, token: token, at: now, minimumAge: minimumAge) ?? .superseded
        if refusal != .superseded { observer?.upstreamRefusedToken(identity: tokens.identity.name, refetch: refusal == .dropped) }
        return refusal
    }

    /// An upstream asked a request with a DPoP token of `tokens` for a nonce and the request
    /// went again with it (counted; the token stays). Thread-safe.
    public func upstreamAskedForDPoPNonce(_ tokens: IdentityTokens) {
        observer?.dpopNonceRetried(identity: tokens.identity.name, server: "upstream")
    }

    /// Fetches a new token for `tokens` now (the current one stays in use meanwhile).
    /// Thread-safe.
    public func refreshNow(_ tokens: IdentityTokens) {
        tokens.update { $0.refreshNow() }
        inbox.post(.reconsider(tokens))
    }

    /// Forgets the token and refresh token of `tokens` and its token store entries (with a
    /// shared store, on every replica), and revokes the refresh token at the IdP when it has a
    /// revocation endpoint (a logout); `listener` hears how each went, on the token thread.
    /// Thread-safe.
    public func forget(_ tokens: IdentityTokens, listener: LogoutListener? = nil) {
        var refreshToken: Secret?
        tokens.publish { lifecycle in
            refreshToken = lifecycle.heldRefreshToken
            lifecycle.forget()
            lifecycle.retryResolutionNow()
            return true
        }
        logins.cancel(identity: tokens.identity.name)
        // An identity on behalf of its callers forgets their tokens.
        tokens.callers?.removeAll()
        observer?.tokenExpiryChanged(identity: tokens.identity.name, unixTime: nil)
        // Before the reconsider: the fetch it starts must not read the forgotten entry back.
        inbox.post(.logout(tokens, refreshToken: refreshToken, completion: listener))
        inbox.post(.reconsider(tokens))
    }

    /// Forgets the registered client of an `auto` identity: deleted at its authorization server
    /// (RFC 7592) where it can be, removed from the token store; the identity registers again at
    /// its next need. `completion` hears how the deletion went, on the token thread. Thread-safe.
    public func forgetClient(_ tokens: IdentityTokens, completion: @escaping @Sendable (ClientDeletion) -> Void) {
        inbox.post(.forgetClient(tokens, completion: completion))
    }

    /// The keys of inbound issuer `issuer` (its JWKS at `jwksUrl`, or discovered), fetched with
    /// `tlsSettings` (built as `tls`, which is used from now on): the one routes with the same
    /// three already use, else new. The keys are read on first need, then again when a token names
    /// a key they lack (at most once per `InboundKeyState.minimumRefetchSeconds`). Thread-safe.
    public func inboundKeys(issuer: String, jwksUrl: HTTPURL?, tlsSettings: TLSSettings?, tls: TLSConfiguration?) -> InboundKeys {
        inboundKeySets.withLock { sets in
            sets.removeAll { $0.keys == nil }
            if let held = sets.lazy.compactMap(\.keys).first(where: {
                $0.issuer == issuer && $0.jwksUrl == jwksUrl && $0.tlsSettings == tlsSettings
            }) {
                held.tls = tls
                return held
            }
            let keys = InboundKeys(issuer: issuer, jwksUrl: jwksUrl, tlsSettings: tlsSettings, tls: tls, inbox: inbox)
            sets.append(HeldInboundKeys(keys: keys))
            return keys
        }
    }

    /// Where and as `tokens`' client a route asks about callers' opaque tokens: at `endpoint`, or
    /// at the `introspection_endpoint` of `issuer`'s metadata (read with `discoveryTLS`).
    /// Thread-safe.
    public func introspectionSource(issuer: String, endpoint: HTTPURL?, tokens: IdentityTokens, rules: IntrospectionRules,
                                    maximumReuseSeconds: Int64, discoveryTLS: TLSConfiguration?) -> IntrospectionSource {
        IntrospectionSource(issuer: issuer, configuredEndpoint: endpoint, tokens: tokens, rules: rules, maximumReuseSeconds: maximumReuseSeconds,
                            discoveryTLS: discoveryTLS, inbox: inbox)
    }

    /// Stops the token thread; token requests in flight are abandoned. Effective once.
    public func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        inbox.post(.stop)
        thread.join()
    }
}

/// An inbound issuer's keys as the token service lists them: held by the settings that use them.
private struct HeldInboundKeys: Sendable {
    weak let keys: InboundKeys?
}
