import Prometheus
@testable import RelayMetrics
import XCTest

/// The per-request series as swift-prometheus keeps them, made and recorded the way the relay did
/// before it kept them itself: both histograms when a route is first used in a worker, a request
/// counter per status class on its first request. The reference the relay's exposition must match.
private final class ReferenceSeries {
    /// One route in one worker: its labels as first spelled, and its histograms.
    private struct Route {
        let route: String, worker: String
        let request: ValueHistogram, upstream: ValueHistogram
    }

    let registry = PrometheusCollectorRegistry()
    private var routes: [String: Route] = [:]

    private func route(_ route: String, _ worker: Int) -> Route {
        let key = "\(route)\u{0}\(worker)"
        if let known = routes[key] { return known }
        let labels = [("route", route), ("worker", String(worker))]
        let made = Route(route: route, worker: String(worker),
                         request: registry.makeValueHistogram(descriptor: RelayMetrics.Series.requestDuration, labels: labels,
                                                              buckets: RelayMetrics.durationBuckets),
                         upstream: registry.makeValueHistogram(descriptor: RelayMetrics.Series.upstreamDuration, labels: labels,
                                                               buckets: RelayMetrics.durationBuckets))
        routes[key] = made
        return made
    }

    func touch(route: String, worker: Int) { _ = self.route(route, worker) }

    func countRequest(route name: String, worker: Int, status: Int, seconds: Double?) {
        let route = route(name, worker)
        let statusClass = min(max(status / 100, 1), 5)
        registry.makeCounter(descriptor: RelayMetrics.Series.requests,
                             labels: [("route", route.route), ("status_class", "\(statusClass)xx"), ("worker", route.worker)]).increment()
        if let seconds { route.request.record(seconds) }
    }

    func recordUpstream(route: String, worker: Int, seconds: Double) {
        self.route(route, worker).upstream.record(seconds)
    }

    func exposition() -> [UInt8] {
        var text: [UInt8] = []
        registry.emit(into: &text)
        return text
    }
}

/// Uniform in [0, 1) from a fixed seed (SplitMix64), so a failure repeats.
private struct SeededUnit {
    var state: UInt64
    mutating func next() -> Double {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return Double((z ^ (z >> 31)) >> 11) / Double(1 << 53)
    }
}

final class RouteSeriesExpositionTests: XCTestCase {
    private let families = [RelayMetrics.Series.requests.name, RelayMetrics.Series.requestDuration.name,
                            RelayMetrics.Series.upstreamDuration.name]

    private func assertSameFamilies(_ metrics: RelayMetrics, _ reference: ReferenceSeries,
                                    file: StaticString = #filePath, line: UInt = #line) {
        let ours = metrics.exposition(), theirs = reference.exposition()
        for name in families {
            assertSameLines(familyLines(name, in: ours, file: file, line: line), familyLines(name, in: theirs, file: file, line: line),
                            name, file: file, line: line)
        }
    }

    func testManyRoutesAndWorkersReadExactlyAsSwiftPrometheusWritesThem() {
        let bounds = RelayMetrics.durationBuckets
        // Every bound exactly and either side of it, zero both ways, the smallest double, past the
        // last bound, sums that print with many digits (0.1 + 0.2), then durations spread over
        // eight decades.
        var values: [Double] = [0, -0.0, .leastNonzeroMagnitude, 1e-9] + bounds + bounds.map(\.nextUp) + bounds.map(\.nextDown)
            + [30.000001, 31, 1e9, 0.1, 0.2, 0.3, 1.0 / 3]
        var random = SeededUnit(state: 15)
        for _ in 0..<3000 { values.append(pow(10, -6 + 8 * random.next())) }
        // Label values to escape, non-ASCII, the empty route (no route matched), and two spellings
        // of one name that Swift's strings call equal: both keep the first spelling's series.
        let routes = ["orders", "", #"a "quoted" \ name"#, "line\nfeed", "ünïcode/päth", "caf\u{E9}", "cafe\u{301}"]
        let workers = [0, 1, 2, 10]
        let statuses = [200, 204, 301, 404, 500, 503, 100, 0, 99, 600, 999, -5, 299, 418]
        let metrics = RelayMetrics(), reference = ReferenceSeries()
        let handles = workers.map { metrics.worker($0) }
        for (index, value) in values.enumerated() {
            let route = routes[index % routes.count], worker = index / routes.count % workers.count
            let status = statuses[index % statuses.count]
            // Every fifth request untimed (rejected before its head was complete), every third
            // without an upstream.
            let seconds: Double? = index % 5 == 4 ? nil : value
            handles[worker].route(route).countRequest(status: status, seconds: seconds)
            reference.countRequest(route: route, worker: workers[worker], status: status, seconds: seconds)
            if index % 3 != 0 {
                handles[worker].route(route).recordUpstream(seconds: value * 3)
                reference.recordUpstream(route: route, worker: workers[worker], seconds: value * 3)
            }
        }
        assertSameFamilies(metrics, reference)
        // One series per route (the two equal spellings as one) and worker: its buckets, +Inf, _sum, _count.
        XCTAssertEqual(familyLines(RelayMetrics.Series.requestDuration.name, in: metrics.exposition()).count,
                       2 + (routes.count - 1) * workers.count * (bounds.count + 3))
    }

    func testValuesNoDurationHasLandInPlusInfLikeSwiftPrometheusPutsThem() {
        let metrics = RelayMetrics(), reference = ReferenceSeries()
        let worker = metrics.worker(0)
        for (route, values) in [("infinite", [Double.infinity, 1, 0.001]), ("not-a-number", [0.5, .nan, 2]), ("negative", [-1, 0.25])] {
            for value in values {
                worker.route(route).countRequest(status: 200, seconds: value)
                worker.route(route).recordUpstream(seconds: value)
                reference.countRequest(route: route, worker: 0, status: 200, seconds: value)
                reference.recordUpstream(route: route, worker: 0, seconds: value)
            }
        }
        assertSameFamilies(metrics, reference)
        let text = String(decoding: metrics.exposition(), as: UTF8.self)
        XCTAssertTrue(text.contains(#"oauth_relay_request_duration_seconds_bucket{route="not-a-number",worker="0",le="30.0"} 2"#), text)
        XCTAssertTrue(text.contains(#"oauth_relay_request_duration_seconds_bucket{route="not-a-number",worker="0",le="+Inf"} 3"#), text)
    }

    func testARouteWithNothingRecordedHasZeroHistogramsAndNoRequestCounter() {
        let metrics = RelayMetrics(), reference = ReferenceSeries()
        _ = metrics.worker(4).route("idle")
        reference.touch(route: "idle", worker: 4)
        assertSameFamilies(metrics, reference)
        XCTAssertEqual(familyLines(RelayMetrics.Series.requests.name, in: metrics.exposition()), [])
        XCTAssertFalse(familyLines(RelayMetrics.Series.upstreamDuration.name, in: metrics.exposition()).isEmpty)
    }

    func testNoRouteUsedMeansNoPerRequestFamilies() {
        let metrics = RelayMetrics()
        _ = metrics.worker(0)
        for name in families { XCTAssertEqual(familyLines(name, in: metrics.exposition()), [], name) }
    }
}
