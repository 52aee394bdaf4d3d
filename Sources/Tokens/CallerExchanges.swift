// CallerExchanges: the token loop's side of the grants on behalf of the caller (`Grant.caller`).
// A worker whose lookup began a caller's exchange posts it (`TokenService.exchangeForCaller`);
// here it is sent through IdPClient like any token request of the identity (its client
// authentication, credential files, TLS and headers), and its outcome published into the
// identity's per-caller cache, which wakes the requests waiting for it.
//
// An identity with an `issuer` may not know its token endpoint yet: its exchanges wait here for
// discovery (`endpointsMayBeKnown`, after each of the identity's next actions), and are answered
// 503 while discovery fails.
//
// Nothing of a caller's token or of the exchanged one is logged: a line names the identity and
// what the token endpoint answered (its error text has every secret the request carried
// removed, the caller's token among them).

import Endpoints
import FoundationEssentials
import Logging
import OAuth2
import SafeText

/// One caller's token to exchange, as a worker posts it.
public struct CallerExchange: Sendable {
    public let key: CallerKey
    public let token: Secret
    /// The caller token's `exp` (seconds since 1970) when the route validated it; nil: read from
    /// the token if it is a JWT (`CallerGrant.unverifiedExpiry`).
    public let expiresAt: Int64?

    public init(key: CallerKey, token: Secret, expiresAt: Int64?) {
        self.key = key
        self.token = token
        self.expiresAt = expiresAt
    }
}

/// How a caller's exchange ended, as `oauth_relay_caller_exchanges_total{outcome}` counts it.
public enum CallerExchangeOutcome: String, Sendable {
    /// The token endpoint issued the token.
    case issued
    /// Another replica's token for the caller, read from the shared store: no exchange here.
    case shared
    /// The token endpoint refused (the caller's token, or the relay's request).
    case refused
    /// The token endpoint could not answer now.
    case unavailable

    /// The outcome of an exchange answered with `problem`.
    init(_ problem: TokenUnavailable) {
        self = problem.reason == .unavailable ? .unavailable : .refused
    }
}

/// Runs on the token loop only.
final class CallerExchanges {
    private let idp: IdPClient
    private let logger: Logger
    private let observer: (any TokenObserver)?
    /// Exchanges waiting for their identity's endpoints (discovery under way), by slot.
    private var awaitingEndpoints: [Int: [CallerExchange]] = [:]
    /// The fleet's store (TokenFetcher.callerToken), when the token fetcher sets it.
    /// Its arguments: the identity, the caller's token, its expiry, the token an upstream refused
    /// that this exchange replaces (nil: none), the exchange and what hears its outcome.
    var throughFleet: ((IdentityTokens, Secret, Double?, Secret?, @escaping CallerTokenExchange, @escaping CallerTokenCompletion) -> Void)?

    init(idp: IdPClient, logger: Logger, observer: (any TokenObserver)?) {
        self.idp = idp
        self.logger = logger
        self.observer = observer
    }

    /// Sends `exchange` for `tokens`, or keeps it until the identity's endpoints are known.
    func exchange(_ exchange: CallerExchange, for tokens: IdentityTokens) {
        guard tokens.callers != nil else { return }
        switch endpoint(of: tokens) {
        case .known(let endpoint):
            send(exchange, to: endpoint, for: tokens)
        case .discovering:
            awaitingEndpoints[tokens.slot, default: []].append(exchange)
        case .failing(let problem):
            fail(exchange, problem, for: tokens)
        }
    }

    /// The identity's lifecycle moved on (discovery may have ended): the exchanges waiting for
    /// its endpoints go, or are answered while discovery fails.
    func endpointsMayBeKnown(_ tokens: IdentityTokens) {
        guard let waiting = awaitingEndpoints[tokens.slot] else { return }
        let found = endpoint(of: tokens)
        if case .discovering = found { return }
        awaitingEndpoints[tokens.slot] = nil
        for exchange in waiting {
            switch found {
            case .known(let endpoint): send(exchange, to: endpoint, for: tokens)
            case .failing(let problem): fail(exchange, problem, for: tokens)
            case .discovering: break
            }
        }
    }

    /// A reload retired the slot and nothing waits for it any more.
    func forget(slot: Int) {
        awaitingEndpoints[slot] = nil
    }

    private enum TokenEndpoint {
        case known(HTTPURL)
        case discovering
        case failing(TokenUnavailable)
    }

    private func endpoint(of tokens: IdentityTokens) -> TokenEndpoint {
        let now = monotonicSeconds()
        return tokens.update { lifecycle in
            if let endpoint = lifecycle.endpoints?.token { return .known(endpoint) }
            if let problem = lifecycle.discoveryProblem(at: now) { return .failing(problem) }
            return .discovering
        }
    }

    private func send(_ exchange: CallerExchange, to endpoint: HTTPURL, for tokens: IdentityTokens) {
        guard let request = TokenRequest.exchange(for: tokens.identity, callerToken: exchange.token, at: endpoint) else { return }
        let started = monotonicSeconds()
        let callerExpiry = exchange.expiresAt.map(Double.init) ?? CallerGrant.unverifiedExpiry(ofCallerToken: exchange.token.value)
        let unixTime = Date().timeIntervalSince1970
        // The fleet's store calls `atIdP` only when no replica's token serves.
        let asked = AskedTheIdP()
        let atIdP: CallerTokenExchange = { [idp] done in
            asked.value = true
            idp.requestToken(request, for: tokens, completion: done)
        }
        let heard: CallerTokenCompletion = { [self] outcome in
            ended(outcome, of: exchange, startedAt: started, callerExpiry: callerExpiry, unixTime: unixTime, shared: !asked.value, for: tokens)
        }
        // With `store.redis`, a replica's token for this caller, or the exchange under the fleet's
        // single flight (TokenFetcher+CallerTokens); alone otherwise.
        // After an upstream refused the caller's token, that token in Redis is no answer.
        guard let throughFleet else { return atIdP(heard) }
        throughFleet(tokens, exchange.token, callerExpiry, tokens.callers?.refusedToken(exchange.key).map(Secret.init), atIdP, heard)
    }

    /// When a token issued on behalf of a caller expires, and until when it is handed out: its
    /// own lifetime (`expiresIn` from `issuedAt`, monotonic seconds) cut to the caller token's
    /// (`callerExpiry`, seconds since 1970, when known; `unixTime` is the wall clock at
    /// `issuedAt`), reused until shortly before the earlier of the two (`RefreshSchedule`'s margin
    /// with the identity's `skew`), never past it.
    static func lifetime(issuedAt: Double, expiresIn: Double, callerExpiry: Double?, unixTime: Double,
                         skew: Double) -> (expiresAt: Double, reuseUntil: Double) {
        let issuedExpiry = issuedAt + expiresIn
        let expiresAt = min(issuedExpiry, callerExpiry.map { issuedAt + $0 - unixTime } ?? issuedExpiry)
        let reuseUntil = min(expiresAt, RefreshSchedule.refreshAt(issuedAt: issuedAt, lifetime: expiresAt - issuedAt, skew: skew))
        return (expiresAt, reuseUntil)
    }

    /// `shared`: the token is another replica's, read from the shared store (no exchange here).
    private func ended(_ outcome: Result<TokenResponse, TokenEndpointError>, of exchange: CallerExchange, startedAt started: Double,
                       callerExpiry: Double?, unixTime: Double, shared: Bool, for tokens: IdentityTokens) {
        let name = tokens.identity.name
        let now = monotonicSeconds()
        switch outcome {
        case .success(let response):
            let (expiresAt, reuseUntil) = Self.lifetime(issuedAt: started, expiresIn: response.expiresIn, callerExpiry: callerExpiry,
                                                        unixTime: unixTime, skew: tokens.identity.refreshSkewSeconds)
            guard expiresAt > now else {
                let callerExpired = callerExpiry.map { $0 <= unixTime + now - started } ?? false
                let problem = TokenUnavailable(identity: name, reason: callerExpired ? .callerUnauthorized : .refused,
                                               detail: callerExpired ? "the caller's token has expired"
                                                   : "the token identity \(name) was issued for the caller expired before it arrived")
                return fail(exchange, problem, for: tokens, seconds: CallerRefusal.refusalSeconds)
            }
            tokens.callers?.publish(exchange.key, .issued(value: response.accessToken.value, issuedAt: started, expiresAt: expiresAt,
                                                          reuseUntil: reuseUntil))
            observer?.callerExchangeEnded(identity: name, outcome: shared ? .shared : .issued)
            logger.debug("caller token exchanged", metadata: ["identity": .string(name),
                                                               "expires_in": .stringConvertible(Int(expiresAt - now))])
        case .failure(let error):
            let refusal = CallerRefusal(error, identity: name)
            tokens.callers?.publish(exchange.key, .refused(refusal, until: now + refusal.seconds))
            observer?.callerExchangeEnded(identity: name, outcome: CallerExchangeOutcome(refusal.problem))
            log(refusal, error, of: name)
        }
    }

    /// Answers `exchange` with `problem` without asking the token endpoint.
    private func fail(_ exchange: CallerExchange, _ problem: TokenUnavailable, for tokens: IdentityTokens, seconds: Double? = nil) {
        let refusal = CallerRefusal(problem: problem, seconds: seconds ?? Double(problem.retryAfterSeconds ?? 1))
        tokens.callers?.publish(exchange.key, .refused(refusal, until: monotonicSeconds() + refusal.seconds))
        observer?.callerExchangeEnded(identity: tokens.identity.name, outcome: CallerExchangeOutcome(problem))
    }

    /// A caller's refusal is debug (any caller can send a token the IdP refuses); the relay's
    /// own request refused, or the token endpoint unavailable, is a warning.
    private func log(_ refusal: CallerRefusal, _ error: TokenEndpointError, of name: String) {
        let metadata: Logger.Metadata = ["identity": .string(name), "error": .string("\(error)")]
        switch refusal.problem.reason {
        case .callerUnauthorized, .callerForbidden:
            logger.debug("token endpoint refused to exchange a caller's token", metadata: metadata)
        case .unavailable:
            logger.warning("caller token exchange failed: the token endpoint is unavailable", metadata: metadata)
        case .refused, .needsLogin, .needsConfiguration:
            logger.warning("token endpoint refused the relay's exchange of a caller's token", metadata: metadata)
        }
    }
}

/// Whether an exchange's request went to the token endpoint (token loop only).
private final class AskedTheIdP {
    var value = false
}
