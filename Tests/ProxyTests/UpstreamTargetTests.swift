import Config
@testable import Proxy
import Endpoints
import Routing
import XCTest

/// The request-target the relay sends upstream for the client's `target`, taken by a route
/// that rewrites it, computed the way `ClientConnection` does: split, normalize, rewrite.
private func upstreamTarget(_ target: String, route: Route, file: StaticString = #filePath, line: UInt = #line) -> String? {
    let plan = RoutePlan(route: route)
    return withBytes(target) { raw -> String? in
        guard let target = RequestTarget(raw) else {
            XCTFail("\"\(String(decoding: raw, as: UTF8.self))\" is no request-target", file: file, line: line)
            return nil
        }
        var normalized: [UInt8] = []
        guard RequestPath.normalize(target.path, into: &normalized) else {
            XCTFail("the path of \"\(String(decoding: raw, as: UTF8.self))\" is malformed", file: file, line: line)
            return nil
        }
        var out: [UInt8] = []
        var scratch = RoutePlan.TargetScratch()
        normalized.withUnsafeBytes {
            plan.writeUpstreamTarget(rawPath: target.path, normalizedPath: $0, queryWithMark: target.queryWithMark,
                                     into: &out, scratch: &scratch)
        }
        return String(decoding: out, as: UTF8.self)
    }
}

final class UpstreamTargetTests: XCTestCase {
    private let strippingSvc = route(pathPrefix: "/svc/", stripPrefix: true)

    func testStripPrefixKeepsTheClientsBytesAfterThePrefix() {
        XCTAssertEqual(upstreamTarget("/svc/a%2Fb/%7E;p", route: strippingSvc), "/a%2Fb/%7E;p")
    }

    func testBasePathIsPrependedToTheStrippedPath() {
        let stripping = route(to: "http://orders.internal:8080/base", pathPrefix: "/svc/", stripPrefix: true)
        XCTAssertEqual(upstreamTarget("/svc/a%7E", route: stripping), "/base/a%7E")
    }

    func testBasePathIsPrependedToTheWholePathWithoutStripPrefix() {
        let prefixing = route(to: "http://orders.internal:8080/base/")
        XCTAssertEqual(upstreamTarget("/svc/x", route: prefixing), "/base/svc/x")
    }

    func testDotSegmentsThatChangeWhatIsStrippedSendTheNormalizedPath() {
        XCTAssertEqual(upstreamTarget("/svc/../svc/x", route: strippingSvc), "/x")
    }

    func testDotSegmentsCannotClimbOutOfTheBasePath() {
        let prefixing = route(to: "http://orders.internal:8080/base")
        XCTAssertEqual(upstreamTarget("/../../etc", route: prefixing), "/base/etc")
        XCTAssertEqual(upstreamTarget("/%2e%2E/etc", route: prefixing), "/base/etc")
    }

    func testQueryIsAppendedByteForByte() {
        XCTAssertEqual(upstreamTarget("/svc/x?a=%7e&b=/../c&&", route: strippingSvc), "/x?a=%7e&b=/../c&&")
    }

    func testPrefixWithoutTrailingSlashStripsTheWholePathToSlash() {
        let strippingAPI = route(pathPrefix: "/api", stripPrefix: true)
        XCTAssertEqual(upstreamTarget("/api", route: strippingAPI), "/")
        XCTAssertEqual(upstreamTarget("/api?x=1", route: strippingAPI), "/?x=1")
        XCTAssertEqual(upstreamTarget("/api/v1", route: strippingAPI), "/v1")
    }
}
