// IntrospectionSource: where and as whom one route's inbound check asks about callers' opaque
// tokens (RFC 7662), shared by every worker and the token thread. A worker hands it a token and a
// completion (`ask`); the question travels to the token loop as a message and is asked there
// (InboundIntrospections: the endpoint discovered first when none is configured, one question
// per token however many ask). The completion runs on the token loop.

import Endpoints
import Locking
import OAuth2
import SafeText
import TLS

public final class IntrospectionSource: Sendable {
    /// The route's inbound issuer: where the endpoint is discovered without a configured one.
    public let issuer: String
    /// `inbound.introspectionUrl`; nil: the issuer metadata's `introspection_endpoint`.
    public let configuredEndpoint: HTTPURL?
    /// The identity whose client asks (its client authentication, its slot for IdPClient).
    public let tokens: IdentityTokens
    /// What the route asks of an active token (issuer, audiences, scopes, clock skew).
    public let rules: IntrospectionRules
    /// `inbound.introspectionCacheSeconds`.
    public let maximumReuseSeconds: Int64
    /// For the discovery document (the inbound block's `tls`).
    let discoveryTLS: TLSConfiguration?
    private let inbox: TokenInbox
    private let discovered = Locked<HTTPURL?>(nil)

    init(issuer: String, configuredEndpoint: HTTPURL?, tokens: IdentityTokens, rules: IntrospectionRules, maximumReuseSeconds: Int64,
         discoveryTLS: TLSConfiguration?, inbox: TokenInbox) {
        self.issuer = issuer
        self.configuredEndpoint = configuredEndpoint
        self.tokens = tokens
        self.rules = rules
        self.maximumReuseSeconds = maximumReuseSeconds
        self.discoveryTLS = discoveryTLS
        self.inbox = inbox
    }

    /// Asks about `token`; `completion` runs on the token loop with the outcome, always: also
    /// when nothing could be sent. The answer is the caller's to judge for each request (the
    /// outcome's verdict is for a bearer presentation). Thread-safe.
    public func ask(_ token: Secret, completion: @escaping @Sendable (IntrospectionOutcome) -> Void) {
        inbox.post(.introspect(IntrospectionQuestion(source: self, token: token, completion: completion)))
    }

    /// Token loop: the endpoint discovery found, kept until a question to it fails.
    var discoveredEndpoint: HTTPURL? {
        get { discovered.withLock { $0 } }
        set { discovered.withLock { $0 = newValue } }
    }
}

/// One worker's question about a token, on its way to the token loop.
struct IntrospectionQuestion: Sendable {
    let source: IntrospectionSource
    let token: Secret
    let completion: @Sendable (IntrospectionOutcome) -> Void
}
