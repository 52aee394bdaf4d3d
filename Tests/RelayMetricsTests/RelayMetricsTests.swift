import RelayMetrics
import XCTest

/// The exposition as `series line → value`, e.g. `oauth_relay_requests_total{route="a",…}` → 3.
private func samples(_ metrics: RelayMetrics) -> [String: Double] {
    var result: [String: Double] = [:]
    for line in String(decoding: metrics.exposition(), as: UTF8.self).split(separator: "\n") where !line.hasPrefix("#") {
        guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else {
            XCTFail("not a sample line: \(line)")
            continue
        }
        result[String(line[..<space])] = value
    }
    return result
}

final class RelayMetricsTests: XCTestCase {
    func testRequestsAreCountedByRouteStatusClassAndWorker() {
        let metrics = RelayMetrics()
        let worker0 = metrics.worker(0), worker1 = metrics.worker(1)
        for status in [200, 204, 302, 404, 502] { worker0.route("orders").countRequest(status: status, seconds: 0.002) }
        worker1.route("orders").countRequest(status: 200, seconds: nil)
        let values = samples(metrics)
        XCTAssertEqual(values[#"oauth_relay_requests_total{route="orders",status_class="2xx",worker="0"}"#], 2)
        XCTAssertEqual(values[#"oauth_relay_requests_total{route="orders",status_class="3xx",worker="0"}"#], 1)
        XCTAssertEqual(values[#"oauth_relay_requests_total{route="orders",status_class="4xx",worker="0"}"#], 1)
        XCTAssertEqual(values[#"oauth_relay_requests_total{route="orders",status_class="5xx",worker="0"}"#], 1)
        XCTAssertEqual(values[#"oauth_relay_requests_total{route="orders",status_class="2xx",worker="1"}"#], 1)
        // A class never seen has no series.
        XCTAssertNil(values[#"oauth_relay_requests_total{route="orders",status_class="1xx",worker="0"}"#])
        // Timed requests only in the histogram: 5 on worker 0, none on worker 1.
        XCTAssertEqual(values[#"oauth_relay_request_duration_seconds_count{route="orders",worker="0"}"#], 5)
        XCTAssertEqual(values[#"oauth_relay_request_duration_seconds_count{route="orders",worker="1"}"#], 0)
        XCTAssertEqual(values[#"oauth_relay_request_duration_seconds_bucket{route="orders",worker="0",le="0.001"}"#], 0)
        XCTAssertEqual(values[#"oauth_relay_request_duration_seconds_bucket{route="orders",worker="0",le="0.0025"}"#], 5)
        XCTAssertEqual(values[#"oauth_relay_request_duration_seconds_sum{route="orders",worker="0"}"#]!, 0.01, accuracy: 1e-9)
    }

    func testTheSameRouteNameGivesTheSameSeriesInOneWorker() {
        let metrics = RelayMetrics()
        let worker = metrics.worker(0)
        XCTAssertTrue(worker.route("a") === worker.route("a"))
        // A second handle of the same worker index (a restarted worker) adds to the same series.
        worker.route("a").countRequest(status: 200, seconds: nil)
        metrics.worker(0).route("a").countRequest(status: 200, seconds: nil)
        XCTAssertEqual(samples(metrics)[#"oauth_relay_requests_total{route="a",status_class="2xx",worker="0"}"#], 2)
    }

    func testUpstreamDurationsAndErrorsByKind() {
        let metrics = RelayMetrics()
        let route = metrics.worker(0).route("a")
        route.recordUpstream(seconds: 0.2)
        route.countUpstreamError(kind: "connect")
        route.countUpstreamError(kind: "connect")
        route.countUpstreamError(kind: "response_timeout")
        let values = samples(metrics)
        XCTAssertEqual(values[#"oauth_relay_upstream_duration_seconds_count{route="a",worker="0"}"#], 1)
        XCTAssertEqual(values[#"oauth_relay_upstream_duration_seconds_bucket{route="a",worker="0",le="0.1"}"#], 0)
        XCTAssertEqual(values[#"oauth_relay_upstream_duration_seconds_bucket{route="a",worker="0",le="0.25"}"#], 1)
        XCTAssertEqual(values[#"oauth_relay_upstream_errors_total{route="a",kind="connect",worker="0"}"#], 2)
        XCTAssertEqual(values[#"oauth_relay_upstream_errors_total{route="a",kind="response_timeout",worker="0"}"#], 1)
    }

    func testConnectionGaugesGoUpAndDown() {
        let metrics = RelayMetrics()
        let worker = metrics.worker(3)
        worker.clientConnectionOpened()
        worker.clientConnectionOpened()
        worker.upstreamConnectionOpened()
        worker.clientConnectionClosed()
        let values = samples(metrics)
        XCTAssertEqual(values[#"oauth_relay_connections{side="client",worker="3"}"#], 1)
        XCTAssertEqual(values[#"oauth_relay_connections{side="upstream",worker="3"}"#], 1)
    }

    func testTokenStoreOperationsAreCountedByOperationAndOutcome() {
        let metrics = RelayMetrics()
        metrics.tokenStoreOperation(identity: "orders", operation: "read", outcome: "found")
        metrics.tokenStoreOperation(identity: "orders", operation: "write", outcome: "ok")
        metrics.tokenStoreOperation(identity: "orders", operation: "write", outcome: "ok")
        let values = samples(metrics)
        XCTAssertEqual(values[#"oauth_relay_token_store_operations_total{identity="orders",operation="read",outcome="found"}"#], 1)
        XCTAssertEqual(values[#"oauth_relay_token_store_operations_total{identity="orders",operation="write",outcome="ok"}"#], 2)
    }

    func testTokenSeriesAndARemovedIdentityLosesItsExpiryButNotItsCounts() {
        let metrics = RelayMetrics()
        metrics.tokenRequestEnded(identity: "orders", outcome: "success")
        metrics.tokenRequestEnded(identity: "orders", outcome: "unavailable")
        metrics.tokenRequestEnded(identity: "orders", outcome: "success")
        metrics.tokenExpiryChanged(identity: "orders", unixTime: 1_800_000_000)
        var values = samples(metrics)
        XCTAssertEqual(values[#"oauth_relay_token_requests_total{identity="orders",outcome="success"}"#], 2)
        XCTAssertEqual(values[#"oauth_relay_token_requests_total{identity="orders",outcome="unavailable"}"#], 1)
        XCTAssertEqual(values[#"oauth_relay_token_expiry_timestamp_seconds{identity="orders"}"#], 1_800_000_000)
        metrics.tokenExpiryChanged(identity: "orders", unixTime: nil)
        XCTAssertEqual(samples(metrics)[#"oauth_relay_token_expiry_timestamp_seconds{identity="orders"}"#], 0)
        metrics.identityRemoved("orders")
        values = samples(metrics)
        XCTAssertNil(values[#"oauth_relay_token_expiry_timestamp_seconds{identity="orders"}"#])
        XCTAssertEqual(values[#"oauth_relay_token_requests_total{identity="orders",outcome="success"}"#], 2)
    }

    func testTheTokenQueueDepthIsExportedFromTheStartAndFollowsWhatItIsTold() {
        let metrics = RelayMetrics()
        XCTAssertEqual(samples(metrics)["oauth_relay_token_queue_depth"], 0)
        metrics.tokenInboxDepthChanged(3)
        XCTAssertEqual(samples(metrics)["oauth_relay_token_queue_depth"], 3)
        metrics.tokenInboxDepthChanged(0)
        XCTAssertEqual(samples(metrics)["oauth_relay_token_queue_depth"], 0)
    }

    func testReloadsAreCountedAndBothOutcomesExportedFromTheStart() {
        let metrics = RelayMetrics()
        var values = samples(metrics)
        XCTAssertEqual(values[#"oauth_relay_config_reloads_total{outcome="applied"}"#], 0)
        XCTAssertEqual(values[#"oauth_relay_config_reloads_total{outcome="rejected"}"#], 0)
        let loadedAt = values["oauth_relay_config_last_reload_success_timestamp_seconds"]!
        XCTAssertGreaterThan(loadedAt, 1_700_000_000)
        metrics.reloadEnded(applied: false)
        values = samples(metrics)
        XCTAssertEqual(values[#"oauth_relay_config_reloads_total{outcome="rejected"}"#], 1)
        XCTAssertEqual(values["oauth_relay_config_last_reload_success_timestamp_seconds"], loadedAt)
        metrics.reloadEnded(applied: true)
        values = samples(metrics)
        XCTAssertEqual(values[#"oauth_relay_config_reloads_total{outcome="applied"}"#], 1)
        XCTAssertGreaterThanOrEqual(values["oauth_relay_config_last_reload_success_timestamp_seconds"]!, loadedAt)
    }

    func testLabelValuesAreEscapedAndEveryFamilyHasHelpAndType() {
        let metrics = RelayMetrics()
        metrics.worker(0).route(#"a "quoted" \ name"#).countRequest(status: 200, seconds: 0.001)
        let text = String(decoding: metrics.exposition(), as: UTF8.self)
        XCTAssertTrue(text.contains(#"route="a \"quoted\" \\ name""#), text)
        let families = Set(text.split(separator: "\n").filter { !$0.hasPrefix("#") }.map { line in
            String(line.prefix { $0 != "{" && $0 != " " })
                .replacingOccurrences(of: "_bucket", with: "").replacingOccurrences(of: "_sum", with: "")
                .replacingOccurrences(of: "_count", with: "")
        })
        for family in families {
            XCTAssertTrue(text.contains("# HELP \(family) "), "no HELP for \(family)")
            XCTAssertTrue(text.contains("# TYPE \(family) "), "no TYPE for \(family)")
        }
        XCTAssertEqual(RelayMetrics.contentType, "text/plain; version=0.0.4; charset=utf-8")
    }
}
