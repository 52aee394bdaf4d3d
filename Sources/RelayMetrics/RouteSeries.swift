import Locking

/// The per-request series of one route in one worker: requests by status class and the two
/// duration histograms. Its worker records into it (one writer, see `SingleWriterCounts`); the
/// scrape reads it from the admin thread.
final class RouteSeries: Sendable {
    let route: String
    let worker: Int
    /// `route="…"` and `worker="…"`, as the exposition writes them (the request counter puts
    /// `status_class` between the two).
    let routeLabel: [UInt8]
    let workerLabel: [UInt8]
    /// Requests answered, by status class: index 0 counts 1xx, … index 4 counts 5xx. A class that
    /// never had a request is not exported, like a counter that was never made.
    let requests = SingleWriterCounts(count: 5)
    let requestDuration: WorkerHistogram
    let upstreamDuration: WorkerHistogram

    init(route: String, worker: Int, bounds: [Double]) {
        self.route = route
        self.worker = worker
        routeLabel = ExpositionText.label("route", route)
        workerLabel = ExpositionText.label("worker", String(worker))
        requestDuration = WorkerHistogram(bounds: bounds)
        upstreamDuration = WorkerHistogram(bounds: bounds)
    }

    /// The index into `requests` of `status`'s class (below 100: 1xx, 600 and above: 5xx).
    @inline(__always)
    static func statusClassIndex(_ status: Int) -> Int {
        min(max(status / 100, 1), 5) - 1
    }
}

/// Every `RouteSeries` of the relay, one per route and worker: a worker's handle finds or makes
/// its route's series here on first use (a restarted worker finds the series of its index again),
/// and the scrape lists them. The lock is taken only for that, never while recording.
final class RouteSeriesTable: Sendable {
    private struct Key: Hashable, Sendable {
        let route: String
        let worker: Int
    }

    let bounds: [Double]
    private let table = Locked<[Key: RouteSeries]>([:])

    init(bounds: [Double]) {
        self.bounds = bounds
    }

    func series(route: String, worker: Int) -> RouteSeries {
        table.withLock { table in
            let key = Key(route: route, worker: worker)
            if let known = table[key] { return known }
            let made = RouteSeries(route: route, worker: worker, bounds: bounds)
            table[key] = made
            return made
        }
    }

    /// Every series, by route, then worker.
    func all() -> [RouteSeries] {
        table.withLock { Array($0.values) }.sorted { ($0.route, $0.worker) < ($1.route, $1.worker) }
    }
}
