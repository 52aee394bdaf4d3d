import Prometheus

// The per-request families in the text exposition format (0.0.4), written by the relay because
// their series are `RouteSeries`, not swift-prometheus collectors. The lines are the ones
// swift-prometheus writes for the same counter and histograms (RelayMetricsTests compares them
// byte for byte):
//
//   # HELP <name> <help, backslash escaped>
//   # TYPE <name> counter | histogram
//   <name>{route="…",status_class="2xx",worker="…"} <count>
//   <name>_bucket{route="…",worker="…",le="<bound as Double.description>"} <cumulative count>
//   <name>_bucket{route="…",worker="…",le="+Inf"} <count>
//   <name>_sum{route="…",worker="…"} <sum as Double.description>
//   <name>_count{route="…",worker="…"} <count>
//
// Each family's lines stay together under one HELP and TYPE; a family with no series has no
// lines at all, as in swift-prometheus's registry before its first collector of that name.

extension RouteSeriesTable {
    /// Appends `oauth_relay_requests_total` and the two duration histograms.
    func writeExposition(into text: inout [UInt8]) {
        let series = all()
        writeRequests(series, into: &text)
        // Every series has both histograms, so both families are written once there is a series.
        guard !series.isEmpty else { return }
        let bucketBounds = bounds.map { Array($0.description.utf8) }
        for (family, histogram) in [(RelayMetrics.Series.requestDuration, \RouteSeries.requestDuration),
                                    (RelayMetrics.Series.upstreamDuration, \RouteSeries.upstreamDuration)] {
            ExpositionText.appendHeader(family, type: "histogram", into: &text)
            for one in series {
                ExpositionText.appendHistogram(name: family.name, labels: one.routeLabel + [UInt8(ascii: ",")] + one.workerLabel,
                                               bucketBounds: bucketBounds, one[keyPath: histogram].snapshot(), into: &text)
            }
        }
    }

    private func writeRequests(_ series: [RouteSeries], into text: inout [UInt8]) {
        // Read once, so that the header and the lines agree on whether there is anything to write.
        var counted: [(series: RouteSeries, statusClass: Int, count: UInt64)] = []
        for one in series {
            for index in 0..<one.requests.count {
                let count = one.requests.value(index)
                if count > 0 { counted.append((one, index + 1, count)) }
            }
        }
        guard !counted.isEmpty else { return }
        let family = RelayMetrics.Series.requests
        ExpositionText.appendHeader(family, type: "counter", into: &text)
        for (one, statusClass, count) in counted {
            text.append(contentsOf: family.name.utf8)
            text.append(UInt8(ascii: "{"))
            text.append(contentsOf: one.routeLabel)
            text.append(UInt8(ascii: ","))
            text.append(contentsOf: ExpositionText.label("status_class", "\(statusClass)xx"))
            text.append(UInt8(ascii: ","))
            text.append(contentsOf: one.workerLabel)
            text.append(contentsOf: "} \(count)\n".utf8)
        }
    }
}

/// The pieces of the text format the families above are made of.
enum ExpositionText {
    /// `name="value"`, the value escaped: backslash, double quote and line feed.
    static func label(_ name: String, _ value: String) -> [UInt8] {
        var text = Array(name.utf8)
        text.append(contentsOf: #"=""#.utf8)
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\\"): text.append(contentsOf: #"\\"#.utf8)
            case UInt8(ascii: "\""): text.append(contentsOf: #"\""#.utf8)
            case UInt8(ascii: "\n"): text.append(contentsOf: #"\n"#.utf8)
            default: text.append(byte)
            }
        }
        text.append(UInt8(ascii: "\""))
        return text
    }

    /// `# HELP` (left out for an empty help text) and `# TYPE`.
    static func appendHeader(_ family: MetricNameDescriptor, type: String, into text: inout [UInt8]) {
        if let help = family.helpText, !help.isEmpty {
            text.append(contentsOf: "# HELP \(family.name) ".utf8)
            for byte in help.utf8 {
                switch byte {
                case UInt8(ascii: "\\"): text.append(contentsOf: #"\\"#.utf8)
                case UInt8(ascii: "\n"): text.append(contentsOf: #"\n"#.utf8)
                default: text.append(byte)
                }
            }
            text.append(UInt8(ascii: "\n"))
        }
        text.append(contentsOf: "# TYPE \(family.name) \(type)\n".utf8)
    }

    /// One histogram series: a line per bound, `+Inf`, `_sum` and `_count`. `labels`: the series'
    /// labels without braces; `bucketBounds`: each bound's `le` text.
    static func appendHistogram(name: String, labels: [UInt8], bucketBounds: [[UInt8]], _ snapshot: WorkerHistogram.Snapshot,
                                into text: inout [UInt8]) {
        func appendBucket(_ bound: [UInt8], _ count: UInt64) {
            text.append(contentsOf: "\(name)_bucket{".utf8)
            text.append(contentsOf: labels)
            text.append(contentsOf: #",le=""#.utf8)
            text.append(contentsOf: bound)
            text.append(contentsOf: "\"} \(count)\n".utf8)
        }
        for (bound, count) in zip(bucketBounds, snapshot.cumulativeCounts) { appendBucket(bound, count) }
        appendBucket(Array("+Inf".utf8), snapshot.count)
        for (suffix, value) in [("_sum", snapshot.sum.description), ("_count", String(snapshot.count))] {
            text.append(contentsOf: "\(name)\(suffix){".utf8)
            text.append(contentsOf: labels)
            text.append(contentsOf: "} \(value)\n".utf8)
        }
    }
}
