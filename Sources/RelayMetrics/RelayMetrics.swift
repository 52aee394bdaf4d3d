// RelayMetrics: the relay's Prometheus metrics, served at `GET /metrics`.
//
// Per-request series carry a `worker` label: each worker records into its own counters and
// histograms, so the request path never takes a lock another worker could hold. Sum over `worker`
// for the relay's totals.
//
// The three series a request records into (requests_total and the two duration histograms) are
// the relay's own (`RouteSeries`): one writer each, its worker, which adds with plain atomic loads
// and stores, no lock and no read-modify-write instruction; the scrape reads them without stopping
// the worker (`WorkerHistogram` states what a scrape mid-record sees) and writes them in
// swift-prometheus's format (RouteSeriesExposition.swift). Everything else is swift-prometheus's
// registry, whose lines come first in the exposition.
//
//   oauth_relay_requests_total{route,status_class,worker}         counter
//   oauth_relay_request_duration_seconds{route,worker}             histogram (head in → response out)
//   oauth_relay_upstream_duration_seconds{route,worker}            histogram (request sent → response head)
//   oauth_relay_upstream_errors_total{route,kind,worker}           counter
//   oauth_relay_refused_requests_total{reason}                      counter (host, cross-site: what a web page made a browser send)
//   oauth_relay_connections{side,worker}                            gauge (open client / upstream connections)
//   oauth_relay_upstream_queued_exchanges{worker}                   gauge (exchanges waiting for an upstream connection)
//   oauth_relay_token_requests_total{identity,outcome}              counter (token thread)
//   oauth_relay_token_expiry_timestamp_seconds{identity}            gauge (Unix time; 0 without a token)
//   oauth_relay_token_queue_depth                                    gauge (messages waiting for the token thread)
//   oauth_relay_token_store_operations_total{identity,operation,outcome}  counter (token thread)
//   oauth_relay_dpop_nonce_retries_total{identity,server}           counter (token thread, workers)
//   oauth_relay_store_operations_total{backend,outcome}             counter (token thread: file, redis)
//   oauth_relay_inbound_validations_total{route,outcome}            counter (workers: callers' tokens checked)
//   oauth_relay_jwks_fetches_total{issuer,outcome}                  counter (token thread: inbound issuers' keys)
//   oauth_relay_caller_exchanges_total{identity,outcome}            counter (token thread; with the caller cache's
//                                                                   series: CallerCacheMetrics.swift)
//   oauth_relay_inbound_introspections_total{identity,outcome}      counter (token thread: callers' opaque tokens asked about)
//   oauth_relay_config_reloads_total{outcome}                       counter
//   oauth_relay_config_last_reload_success_timestamp_seconds        gauge

import FoundationEssentials
import Prometheus

public final class RelayMetrics: Sendable {
    /// Request and upstream duration buckets, in seconds: a local relay answers in well under a
    /// millisecond, upstreams in milliseconds to seconds.
    static let durationBuckets: [Double] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]

    /// The series' names and help texts (the registry requires every series of a name to share
    /// one help text). Computed: the descriptor type is not Sendable.
    enum Series {
        static var requests: MetricNameDescriptor {
            describe("requests", "total", "Requests answered, by route (empty: none matched) and status class.")
        }
        static var requestDuration: MetricNameDescriptor {
            describe("request_duration", "seconds", "Time from a request's head to the end of its response.")
        }
        static var upstreamDuration: MetricNameDescriptor {
            describe("upstream_duration", "seconds", "Time from sending a request upstream to the upstream's response head.")
        }
        static var upstreamErrors: MetricNameDescriptor {
            describe("upstream_errors", "total", "Upstream exchanges that failed, by kind.")
        }
        static var refusedRequests: MetricNameDescriptor {
            describe("refused_requests", "total",
                     "Requests refused for what a web page could have made a browser send, by reason: host (a Host name "
                        + "the listener does not serve: DNS rebinding) or cross-site (a cross-site request on a route with a credential).")
        }
        static var upstreamQueued: MetricNameDescriptor {
            describe("upstream_queued", "exchanges", "Exchanges waiting for a connection to their upstream (maxUpstreamConnections).")
        }
        static var connections: MetricNameDescriptor {
            describe("connections", "", "Open connections, by side (client or upstream).")
        }
        static var tokenRequests: MetricNameDescriptor {
            describe("token_requests", "total", "Requests to the identity's token endpoint, by outcome.")
        }
        static var upstreamTokenRefusals: MetricNameDescriptor {
            describe("upstream_token_refusals", "total",
                     "Upstream retryOnStatus answers to a current token, by action: refetch (dropped, a new one fetched) "
                        + "or passed (kept: fetched after an earlier refusal and younger than minTokenAgeForRetrySeconds).")
        }
        static var stepUps: MetricNameDescriptor {
            describe("step_ups", "total",
                     "Upstream step-up challenges (insufficient_scope, insufficient_user_authentication) to a person's token, by outcome: "
                        + "login_needed (a login for it is asked), declined (declined before: passed to the client) "
                        + "or already_granted (handled as a refused token).")
        }
        static var tokenQueueDepth: MetricNameDescriptor {
            describe("token_queue_depth", "", "Messages waiting in the token thread's inbox (requests needing a token, "
                        + "ended token requests, reloads, logins); 0 once the thread has taken them.")
        }
        static var tokenExpiry: MetricNameDescriptor {
            describe("token_expiry_timestamp", "seconds", "When the identity's access token expires (Unix time; 0: no token).")
        }
        static var storeOperations: MetricNameDescriptor {
            describe("token_store_operations", "total",
                     "Token store operations on the identity's entry (read, write, remove, lock), by outcome.")
        }
        static var logins: MetricNameDescriptor {
            describe("logins", "total",
                     "Interactive logins of the identity, by kind (browser or device) and outcome: started, completed, "
                        + "or failed (denied, expired, refused, invalid_id_token, ...).")
        }
        static var dpopNonceRetries: MetricNameDescriptor {
            describe("dpop_nonce_retries", "total",
                     "Requests sent again because a server asked for a DPoP nonce (use_dpop_nonce), by server: "
                        + "token_endpoint or upstream.")
        }
        static var backendOperations: MetricNameDescriptor {
            describe("store_operations", "total",
                     "Token store operations by backend (file, redis) and outcome (ok, failed, timed_out; redis also "
                        + "conflict: another replica wrote first, skipped: Redis unavailable, the fetch went without it).")
        }
        static var inboundValidations: MetricNameDescriptor {
            describe("inbound_validations", "total",
                     "Callers' tokens checked on routes with inbound, by outcome: valid (signature checked), introspected "
                        + "(active at the introspection endpoint), cache_hit (checked before), invalid, inactive (introspection: "
                        + "not active), insufficient_scope, keys_unavailable, introspection_unavailable, missing (no token), "
                        + "dpop_refused (no valid DPoP proof, or a presentation the route does not take), replayed (a DPoP proof "
                        + "used before).")
        }
        static var jwksFetches: MetricNameDescriptor {
            describe("jwks_fetches", "total",
                     "Reads of an inbound issuer's JWKS (with its discovery), by outcome: ok, refused (no usable document), "
                        + "unavailable (unreachable, timed out, 5xx).")
        }
        static var introspections: MetricNameDescriptor {
            describe("inbound_introspections", "total",
                     "Questions to an introspection endpoint about callers' opaque tokens, by the identity asking and outcome: "
                        + "active, inactive, failed (no usable answer), overloaded (too many under way: not sent), stopped.")
        }
        static var reloads: MetricNameDescriptor {
            describe("config_reloads", "total", "Configuration reloads, by outcome (applied or rejected).")
        }
        static var lastReload: MetricNameDescriptor {
            describe("config_last_reload_success_timestamp", "seconds", "When the configuration was last loaded (Unix time).")
        }

        private static func describe(_ name: String, _ unit: String, _ help: String) -> MetricNameDescriptor {
            MetricNameDescriptor(namespace: "oauth_relay", metricName: name, unitName: unit, helpText: help)
        }
    }

    let registry = PrometheusCollectorRegistry()
    let routeSeries = RouteSeriesTable(bounds: durationBuckets)
    /// `refused_requests_total` by reason, made once: a page that makes a browser send refused
    /// requests in a loop makes every worker count, and a made counter counts without the
    /// registry's lock.
    private let refused: [String: Counter]
    /// `token_queue_depth`, made once: set on every post to the token thread, from any thread.
    private let tokenQueueDepth: Gauge

    public init() {
        registry.makeGauge(descriptor: Series.lastReload).set(to: Self.unixTime())
        tokenQueueDepth = registry.makeGauge(descriptor: Series.tokenQueueDepth)
        for outcome in ["applied", "rejected"] {
            _ = registry.makeCounter(descriptor: Series.reloads, labels: [("outcome", outcome)])
        }
        let registry = registry
        refused = Dictionary(uniqueKeysWithValues: Self.refusalReasons.map { reason in
            (reason, registry.makeCounter(descriptor: Series.refusedRequests, labels: [("reason", reason)]))
        })
    }

    /// The reasons of `oauth_relay_refused_requests_total`, shown from the start at 0.
    public static let refusalReasons = ["host", "cross-site"]

    /// The text exposition format (version 0.0.4).
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    public func exposition() -> [UInt8] {
        var text: [UInt8] = []
        registry.emit(into: &text)
        routeSeries.writeExposition(into: &text)
        return text
    }

    /// The metrics one worker records into; use them from that worker's thread only. One thread at
    /// a time may record under an index: the series are shared by every handle of that index (a
    /// restarted worker continues them) and have a single writer (`SingleWriterCounts`).
    public func worker(_ index: Int) -> WorkerMetrics {
        WorkerMetrics(registry: registry, routeSeries: routeSeries, worker: index, relay: self)
    }

    /// A request refused for `reason` (one of `refusalReasons`). Any thread.
    public func countRefused(reason: String) {
        refused[reason]?.increment()
    }

    // MARK: Tokens (the token thread) and reloads (the main thread)

    public func tokenRequestEnded(identity: String, outcome: String) {
        registry.makeCounter(descriptor: Series.tokenRequests, labels: [("identity", identity), ("outcome", outcome)]).increment()
    }

    /// Any thread.
    public func upstreamRefusedToken(identity: String, refetch: Bool) {
        registry.makeCounter(descriptor: Series.upstreamTokenRefusals,
                             labels: [("identity", identity), ("action", refetch ? "refetch" : "passed")]).increment()
    }

    /// Any thread.
    public func stepUp(identity: String, outcome: String) {
        registry.makeCounter(descriptor: Series.stepUps, labels: [("identity", identity), ("outcome", outcome)]).increment()
    }

    /// Messages now waiting for the token thread. Any thread.
    public func tokenInboxDepthChanged(_ depth: Int) {
        tokenQueueDepth.set(to: Double(depth))
    }

    public func tokenExpiryChanged(identity: String, unixTime: Double?) {
        registry.makeGauge(descriptor: Series.tokenExpiry, labels: [("identity", identity)]).set(to: unixTime ?? 0)
    }

    /// Drops the expiry series of an identity no longer configured (its counters stay: they
    /// count what happened).
    public func identityRemoved(_ identity: String) {
        registry.unregisterGauge(registry.makeGauge(descriptor: Series.tokenExpiry, labels: [("identity", identity)]))
    }

    /// The token thread read, wrote, removed or locked an identity's token store entry.
    public func tokenStoreOperation(identity: String, operation: String, outcome: String) {
        registry.makeCounter(descriptor: Series.storeOperations,
                             labels: [("identity", identity), ("operation", operation), ("outcome", outcome)]).increment()
    }

    public func loginEnded(identity: String, kind: String, outcome: String) {
        registry.makeCounter(descriptor: Series.logins, labels: [("identity", identity), ("kind", kind), ("outcome", outcome)]).increment()
    }

    /// A token request (`server` `token_endpoint`, token thread) or a forwarded request
    /// (`upstream`, a worker) went again with the DPoP nonce its server asked for. Any thread.
    public func dpopNonceRetried(identity: String, server: String) {
        registry.makeCounter(descriptor: Series.dpopNonceRetries, labels: [("identity", identity), ("server", server)]).increment()
    }

    /// The token thread used a token store backend (`file`, `redis`).
    public func storeOperation(backend: String, outcome: String) {
        registry.makeCounter(descriptor: Series.backendOperations, labels: [("backend", backend), ("outcome", outcome)]).increment()
    }

    /// The token thread read an inbound issuer's JWKS, or could not.
    public func jwksFetched(issuer: String, outcome: String) {
        registry.makeCounter(descriptor: Series.jwksFetches, labels: [("issuer", issuer), ("outcome", outcome)]).increment()
    }

    /// The token thread asked an introspection endpoint about a caller's token.
    public func introspectionEnded(identity: String, outcome: String) {
        registry.makeCounter(descriptor: Series.introspections, labels: [("identity", identity), ("outcome", outcome)]).increment()
    }

    public func reloadEnded(applied: Bool) {
        registry.makeCounter(descriptor: Series.reloads, labels: [("outcome", applied ? "applied" : "rejected")]).increment()
        if applied { registry.makeGauge(descriptor: Series.lastReload).set(to: Self.unixTime()) }
    }

    static func unixTime() -> Double { Date().timeIntervalSince1970 }
}

/// One worker's series. Not thread-safe by design: only its worker updates it.
public final class WorkerMetrics {
    private let registry: PrometheusCollectorRegistry
    private let routeSeries: RouteSeriesTable
    private let worker: Int
    private let clientConnections: Gauge
    private let upstreamConnections: Gauge
    private let upstreamQueued: Gauge
    private var routes: [String: RouteMetrics] = [:]
    private var inboundValidations: [InboundSeriesKey: Counter] = [:]
    private let relay: RelayMetrics

    init(registry: PrometheusCollectorRegistry, routeSeries: RouteSeriesTable, worker: Int, relay: RelayMetrics) {
        self.relay = relay
        self.registry = registry
        self.routeSeries = routeSeries
        self.worker = worker
        let worker = String(worker)
        typealias Series = RelayMetrics.Series
        clientConnections = registry.makeGauge(descriptor: Series.connections, labels: [("side", "client"), ("worker", worker)])
        upstreamConnections = registry.makeGauge(descriptor: Series.connections, labels: [("side", "upstream"), ("worker", worker)])
        upstreamQueued = registry.makeGauge(descriptor: Series.upstreamQueued, labels: [("worker", worker)])
    }

    /// The series of route `name` (empty: requests no route took).
    public func route(_ name: String) -> RouteMetrics {
        if let known = routes[name] { return known }
        let made = RouteMetrics(registry: registry, series: routeSeries.series(route: name, worker: worker))
        routes[name] = made
        return made
    }

    public func clientConnectionOpened() { clientConnections.increment(by: 1) }
    public func clientConnectionClosed() { clientConnections.decrement(by: 1) }
    public func upstreamConnectionOpened() { upstreamConnections.increment(by: 1) }
    public func upstreamConnectionClosed() { upstreamConnections.decrement(by: 1) }
    public func upstreamExchangeQueued() { upstreamQueued.increment(by: 1) }
    public func upstreamExchangeDequeued() { upstreamQueued.decrement(by: 1) }

    /// A request refused for `reason` (one of `RelayMetrics.refusalReasons`).
    public func countRefused(reason: String) {
        relay.countRefused(reason: reason)
    }

    /// A caller's token checked on `route`, with `outcome`. Each counter is made once per worker;
    /// counting is then one atomic add.
    public func countInboundValidation(route: String, outcome: String) {
        let key = InboundSeriesKey(route: route, outcome: outcome)
        if let counter = inboundValidations[key] { return counter.increment() }
        let counter = registry.makeCounter(descriptor: RelayMetrics.Series.inboundValidations,
                                           labels: [("route", route), ("outcome", outcome)])
        inboundValidations[key] = counter
        counter.increment()
    }

    private struct InboundSeriesKey: Hashable {
        let route: String
        let outcome: String
    }
}

/// One route's series in one worker.
public final class RouteMetrics {
    private let registry: PrometheusCollectorRegistry
    /// For the upstream error counters: `route`, then `worker`.
    private let labels: [(String, String)]
    private let requests: SingleWriterCounts
    private let requestDuration: WorkerHistogram
    private let upstreamDuration: WorkerHistogram
    private var upstreamErrors: [String: Counter] = [:]

    init(registry: PrometheusCollectorRegistry, series: RouteSeries) {
        self.registry = registry
        labels = [("route", series.route), ("worker", String(series.worker))]
        requests = series.requests
        requestDuration = series.requestDuration
        upstreamDuration = series.upstreamDuration
    }

    /// A request answered with `status`, `seconds` after its head arrived (nil: not timed).
    public func countRequest(status: Int, seconds: Double?) {
        requests.increment(RouteSeries.statusClassIndex(status))
        if let seconds { requestDuration.record(seconds) }
    }

    public func recordUpstream(seconds: Double) {
        upstreamDuration.record(seconds)
    }

    /// `kind`: resolve, connect, connect_timeout, tls, response_timeout, closed, bad_response.
    public func countUpstreamError(kind: String) {
        if let counter = upstreamErrors[kind] { return counter.increment() }
        let counter = registry.makeCounter(descriptor: RelayMetrics.Series.upstreamErrors,
                                           labels: [labels[0], ("kind", kind), labels[1]])
        upstreamErrors[kind] = counter
        counter.increment()
    }
}
