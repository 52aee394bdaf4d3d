import Prometheus

// The series of identities that exchange their callers' tokens, one token per caller:
//
//   oauth_relay_caller_exchanges_total{identity,outcome}        counter (token thread: issued, shared, refused, unavailable)
//   oauth_relay_caller_cache_lookups_total{identity,result}     counter (hit, miss, wait)
//   oauth_relay_caller_cache_evictions_total{identity}          counter
//   oauth_relay_caller_cache_entries{identity}                  gauge (at most the identity's maxCallers)
//
// The cache's counts are kept by the cache itself, under the lock a lookup holds anyway (no
// other write per request), and read at each scrape (`CallerCacheSample`), so their lines are
// written here rather than by swift-prometheus's registry.

/// One identity's per-caller cache as a scrape reads it.
public struct CallerCacheSample: Sendable, Equatable {
    public var identity: String
    public var entries: Int
    /// Requests that found the caller's token (or its remembered refusal) at once.
    public var hits: Int
    /// Lookups that began an exchange.
    public var misses: Int
    /// Requests that joined an exchange in flight.
    public var waits: Int
    public var evictions: Int

    public init(identity: String, entries: Int, hits: Int, misses: Int, waits: Int, evictions: Int) {
        self.identity = identity
        self.entries = entries
        self.hits = hits
        self.misses = misses
        self.waits = waits
        self.evictions = evictions
    }
}

extension RelayMetrics.Series {
    static var callerExchanges: MetricNameDescriptor {
        MetricNameDescriptor(namespace: "oauth_relay", metricName: "caller_exchanges", unitName: "total",
                             helpText: "Exchanges of a caller's token for the identity's, by outcome: issued, refused (the token "
                                + "endpoint refused the caller's token or the relay's request), unavailable (it could not answer).")
    }
    static var callerCacheLookups: MetricNameDescriptor {
        MetricNameDescriptor(namespace: "oauth_relay", metricName: "caller_cache_lookups", unitName: "total",
                             helpText: "Lookups of a caller's token in the identity's per-caller cache, by result: hit (a request "
                                + "found it at once), miss (an exchange began), wait (a request joined the caller's exchange in flight).")
    }
    static var callerCacheEvictions: MetricNameDescriptor {
        MetricNameDescriptor(namespace: "oauth_relay", metricName: "caller_cache_evictions", unitName: "total",
                             helpText: "Callers' entries dropped from the identity's per-caller cache for a new caller (maxCallers).")
    }
    static var callerCacheEntries: MetricNameDescriptor {
        MetricNameDescriptor(namespace: "oauth_relay", metricName: "caller_cache_entries", unitName: "",
                             helpText: "Callers' entries in the identity's per-caller cache (at most its maxCallers).")
    }
}

extension RelayMetrics {
    /// An exchange of a caller's token for `identity`'s ended with `outcome`. Token thread.
    public func callerExchangeEnded(identity: String, outcome: String) {
        registry.makeCounter(descriptor: Series.callerExchanges, labels: [("identity", identity), ("outcome", outcome)]).increment()
    }

    /// `exposition()`, then the per-caller caches' families (nothing for none).
    public func exposition(callerCaches samples: [CallerCacheSample]) -> [UInt8] {
        var text = exposition()
        Self.writeCallerCaches(samples, into: &text)
        return text
    }

    static func writeCallerCaches(_ samples: [CallerCacheSample], into text: inout [UInt8]) {
        guard !samples.isEmpty else { return }
        func line(_ family: MetricNameDescriptor, _ identity: String, _ extra: (String, String)?, _ value: Int) {
            text.append(contentsOf: family.name.utf8)
            text.append(UInt8(ascii: "{"))
            text.append(contentsOf: ExpositionText.label("identity", identity))
            if let (name, labelValue) = extra {
                text.append(UInt8(ascii: ","))
                text.append(contentsOf: ExpositionText.label(name, labelValue))
            }
            text.append(contentsOf: "} \(value)\n".utf8)
        }
        ExpositionText.appendHeader(Series.callerCacheLookups, type: "counter", into: &text)
        for sample in samples {
            line(Series.callerCacheLookups, sample.identity, ("result", "hit"), sample.hits)
            line(Series.callerCacheLookups, sample.identity, ("result", "miss"), sample.misses)
            line(Series.callerCacheLookups, sample.identity, ("result", "wait"), sample.waits)
        }
        ExpositionText.appendHeader(Series.callerCacheEvictions, type: "counter", into: &text)
        for sample in samples { line(Series.callerCacheEvictions, sample.identity, nil, sample.evictions) }
        ExpositionText.appendHeader(Series.callerCacheEntries, type: "gauge", into: &text)
        for sample in samples { line(Series.callerCacheEntries, sample.identity, nil, sample.entries) }
    }
}
