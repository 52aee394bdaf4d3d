import HTTP1
@testable import HTTPClient
@testable import Proxy
import XCTest

/// What the proxy makes of a failure its upstream connection reports: the client's answer, the
/// metric's `kind` label, and whether the request may go again on a fresh connection.
final class UpstreamFailureTests: XCTestCase {
    func testATotalTimeoutIsA504NamingTheLimit() {
        let problem = Problem.upstreamFailure(.responseTotalTimeout, route: "orders")
        XCTAssertEqual(problem.status, 504)
        XCTAssertTrue(problem.detail.contains("upstreamResponseTotalSeconds"), problem.detail)
        XCTAssertEqual(UpstreamFailure.responseTotalTimeout.metricKind, "response_timeout")
    }

    func testAHandshakeThatDoesNotFinishIsATLSFailure() {
        let failure = UpstreamFailure(.handshakeTimeout)
        XCTAssertEqual("\(failure)", "tls(\"TLS handshake timed out\")")
        XCTAssertEqual(failure.metricKind, "tls")
        XCTAssertEqual(Problem.upstreamFailure(failure, route: nil).status, 502)
    }

    func testATLSRecordFailingMidResponseIsATLSFailure() {
        XCTAssertEqual("\(UpstreamFailure(.tlsAfterHandshake("bad record mac")))", "tls(\"bad record mac\")")
    }

    func testTheConnectionsOtherFailuresKeepTheirNames() {
        let pairs: [(ConnectionFailure, String)] = [
            (.resolve("cannot resolve upstream host x: EAI_NONAME"), "resolve(\"cannot resolve upstream host x: EAI_NONAME\")"),
            (.tls("unknown ca"), "tls(\"unknown ca\")"),
            (.connectTimeout, "connectTimeout"),
            (.queueTimeout, "queueTimeout"),
            (.responseTimeout, "responseTimeout"),
            (.responseTotalTimeout, "responseTotalTimeout"),
            (.closed(nil), "closed(nil)"),
        ]
        for (failure, text) in pairs { XCTAssertEqual("\(UpstreamFailure(failure))", text) }
        XCTAssertTrue(UpstreamFailure(.closed(nil)).allowsRetryOnFreshConnection)
        XCTAssertFalse(UpstreamFailure(.responseTimeout).allowsRetryOnFreshConnection)
    }
}
