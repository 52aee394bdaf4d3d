// What the token service tells its observer (the metrics) about token requests and tokens.

import OAuth2

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
/// except `tokenExpiryChanged`, `upstreamRefusedToken`, `upstreamAskedForStepUp`, `dpopNonceRetried` and `loginEnded`,
/// which may come from any thread (a worker counts the browser logins it starts and the
/// callbacks it refuses).
public protocol TokenObserver: Sendable {
    func tokenRequestEnded(identity: String, outcome: TokenRequestOutcome)
    /// The identity's token now expires at `unixTime`, or it has none (nil).
    func tokenExpiryChanged(identity: String, unixTime: Double?)
    /// The identity is no longer configured.
    func identityRemoved(_ name: String)
    /// An upstream refused the identity's token (a `retryOnStatus` answer), and the relay
    /// dropped it to fetch another (`refetch`) or kept it and let the answer through.
    func upstreamRefusedToken(identity: String, refetch: Bool)
    /// An upstream's step-up challenge to the identity's token (any thread), and what the
    /// identity made of it.
    func upstreamAskedForStepUp(identity: String, outcome: StepUpOutcome)
    /// The token thread used the identity's token store entry: `operation` is `read` (outcome
    /// `found`, `empty`, `other_settings`, `other_key`, `moved_aside`, `failed`), `write` or `remove` (`ok`,
    /// `failed`), or `lock` (`acquired`, `timed_out`, `failed`).
    func tokenStoreOperation(identity: String, operation: String, outcome: String)
    /// A server asked for a DPoP nonce (`use_dpop_nonce`) and the request went again with the one
    /// it sent: `server` is `token_endpoint` (token thread) or `upstream` (a worker, any thread).
    func dpopNonceRetried(identity: String, server: String)
    /// A login of the identity started, completed or failed.
    func loginEnded(identity: String, kind: LoginKind, outcome: LoginOutcome)
    /// The token thread used a token store, by `backend` (`file`, `redis`) and `outcome`: `ok`,
    /// `failed`, `timed_out`; for `redis` also `conflict` (a write refused because another
    /// replica wrote first) and `skipped` (Redis unavailable: the fetch went without it).
    func storeOperation(backend: String, outcome: String)
    /// The token thread read an inbound issuer's JWKS (`outcome` `ok`), or could not: `refused` (an
    /// answer that is no usable JWKS or metadata), `unavailable` (unreachable, timed out, 5xx).
    func jwksFetched(issuer: String, outcome: String)
    /// An exchange of a caller's token ended (token thread).
    func callerExchangeEnded(identity: String, outcome: CallerExchangeOutcome)
    /// The token thread asked an introspection endpoint about a caller's token as `identity`'s
    /// client: `active`, `inactive`, `failed` (no usable answer), `overloaded` (not sent),
    /// `stopped`.
    func introspectionEnded(identity: String, outcome: String)
    /// Messages now waiting in the token loop's inbox (any thread: set on each post, 0 when the
    /// loop takes them).
    func tokenInboxDepthChanged(_ depth: Int)
}

/// A step of an interactive login, as counted by `oauth_relay_logins_total{kind,outcome}`.
public enum LoginKind: String, Sendable { case browser, device }

public enum LoginOutcome: Sendable, Equatable {
    case started
    case completed
    /// Why: `denied`, `expired`, `refused`, `invalid_id_token`, `exchange_failed`, ...
    case failed(String)

    public var label: String {
        switch self {
        case .started: "started"
        case .completed: "completed"
        case .failed(let reason): "failed_\(reason)"
        }
    }
}

extension TokenObserver {
    public func loginEnded(identity: String, kind: LoginKind, outcome: LoginOutcome) {}
    public func upstreamRefusedToken(identity: String, refetch: Bool) {}
    public func upstreamAskedForStepUp(identity: String, outcome: StepUpOutcome) {}
    public func tokenStoreOperation(identity: String, operation: String, outcome: String) {}
    public func dpopNonceRetried(identity: String, server: String) {}
    public func storeOperation(backend: String, outcome: String) {}
    public func jwksFetched(issuer: String, outcome: String) {}
    public func callerExchangeEnded(identity: String, outcome: CallerExchangeOutcome) {}
    public func introspectionEnded(identity: String, outcome: String) {}
    public func tokenInboxDepthChanged(_ depth: Int) {}
}
