// The instructions one proxied request spends in RelayMetrics' two per-request calls
// (`countRequest` with a duration, `recordUpstream`), counted by bench/metrics-record-cost.sh under
// callgrind: `recordExchange` is the only function whose instructions are collected.
import RelayMetrics

/// One exchange's worth of metrics, as ProxyWorker.record makes them.
@inline(never)
func recordExchange(_ route: RouteMetrics, seconds: Double, upstreamSeconds: Double) {
    route.countRequest(status: 200, seconds: seconds)
    route.recordUpstream(seconds: upstreamSeconds)
}

let rounds = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1])! : 10_000
let metrics = RelayMetrics()
let route = metrics.worker(0).route("bench")
// Durations spread over the buckets the way a local relay's are: mostly under a few milliseconds.
let durations: [Double] = [0.0003, 0.0007, 0.0004, 0.0012, 0.0009, 0.003, 0.0006, 0.02, 0.0008, 0.15]
for round in 0..<rounds {
    let seconds = durations[round % durations.count]
    recordExchange(route, seconds: seconds, upstreamSeconds: seconds / 2)
}
// Keep the recording observable so nothing is optimized away.
print(metrics.exposition().count)
