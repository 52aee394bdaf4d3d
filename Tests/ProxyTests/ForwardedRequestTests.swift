import Config
@testable import Proxy
import HTTPFields
import XCTest

/// The client every forwarded request in these tests comes from.
private let clientAddress = "192.0.2.7"

/// The fields the relay adds after the client's: X-Forwarded-For/-Proto/-Host and Via.
private func relayFields(xForwardedFor: String = clientAddress, clientHost: String? = "relay.example",
                         via: String = "Via: 1.1 oauth-relay") -> [String] {
    ["X-Forwarded-For: \(xForwardedFor)", "X-Forwarded-Proto: http"]
        + (clientHost.map { ["X-Forwarded-Host: \($0)"] } ?? [])
        + [via]
}

/// Checks that the request with head `request` (then `body`) is forwarded upstream with head
/// `expected`, framed the way `ClientConnection` frames it (re-chunked when chunked, its
/// Content-Length kept when it has one), with `target` as the request-target (the client's
/// own when nil).
private func assertForwarded(_ request: [String], body: String = "", as expected: [String], route: Route = route(),
                             trustForwardedHeaders: Bool = false, target: String? = nil,
                             file: StaticString = #filePath, line: UInt = #line) {
    let parsed = parsedHead(head(request) + body, file: file, line: line)
    let framing: ForwardedHead.Framing = parsed.isChunked ? .chunked : parsed.contentLength != nil ? .contentLength : .none
    var forwarding = ForwardedHead.Forwarding(clientAddress: Array(clientAddress.utf8),
                                              trustForwardedHeaders: trustForwardedHeaders, viaSuffix: viaSuffix)
    let plan = RoutePlan(route: route)
    let forwarded = withBytes(target ?? String(decoding: parsed.target, as: UTF8.self)) { target in
        written {
            ForwardedHead.writeRequest(parsed, target: target, plan: plan, framing: framing, forwarding: &forwarding,
                                       clientHost: parsed.host, token: nil,
                                       upgrade: parsed.isUpgrade ? plan.allowedUpgrade(parsed) : nil, into: &$0)
        }
    }
    XCTAssertEqual(forwarded, head(expected), file: file, line: line)
}

final class ForwardedRequestTests: XCTestCase {
    func testHostIsReplacedByTheUpstreamAuthority() {
        assertForwarded(["GET /a HTTP/1.1", "Host: relay.example"],
                        as: ["GET /a HTTP/1.1", "Host: orders.internal:8080"] + relayFields())
    }

    func testUpstreamOnItsSchemesDefaultPortIsNamedWithoutThePort() {
        assertForwarded(["GET /a HTTP/1.1", "Host: relay.example"],
                        as: ["GET /a HTTP/1.1", "Host: orders.internal"] + relayFields(),
                        route: route(to: "http://orders.internal"))
    }

    func testEndToEndFieldsKeepTheirOrderCaseAndDuplicates() {
        assertForwarded(["GET /a HTTP/1.1", "accept: */*", "Host: relay.example", "X-Trace: 1", "x-trace: 2", "Cookie: a=1"],
                        as: ["GET /a HTTP/1.1", "Host: orders.internal:8080", "accept: */*", "X-Trace: 1", "x-trace: 2",
                             "Cookie: a=1"] + relayFields())
    }

    func testConnectionAndEveryFieldItListsAreDropped() {
        assertForwarded(["GET /a HTTP/1.1", "Host: relay.example", "Connection: keep-alive, X-Hop", "x-hop: secret",
                         "X-Kept: 1", "Connection: x-other", "X-Other: 2"],
                        as: ["GET /a HTTP/1.1", "Host: orders.internal:8080", "X-Kept: 1"] + relayFields())
    }

    func testHopByHopFieldsAreDropped() {
        assertForwarded(["GET /a HTTP/1.1", "Host: relay.example", "Keep-Alive: timeout=5", "Proxy-Connection: keep-alive",
                         "TE: trailers", "Proxy-Authorization: Basic eDp5", "X-Kept: 1"],
                        as: ["GET /a HTTP/1.1", "Host: orders.internal:8080", "X-Kept: 1"] + relayFields())
    }

    func testUpgradeIsDroppedFromARequestThatIsNotAnUpgrade() {
        assertForwarded(["GET /a HTTP/1.1", "Host: relay.example", "Upgrade: h2c"],
                        as: ["GET /a HTTP/1.1", "Host: orders.internal:8080"] + relayFields())
    }

    func testUpgradeRequestGetsConnectionUpgradeAndItsUpgradeFields() {
        assertForwarded(["GET /ws HTTP/1.1", "Host: relay.example", "Connection: Upgrade", "Upgrade: websocket",
                         "Sec-WebSocket-Key: dGhlIHNhbXBsZQ=="],
                        as: ["GET /ws HTTP/1.1", "Host: orders.internal:8080", "Sec-WebSocket-Key: dGhlIHNhbXBsZQ==",
                             "Connection: upgrade", "Upgrade: websocket"] + relayFields())
    }

    func testAnUpgradeToAProtocolTheRouteDoesNotAllowIsForwardedAsAPlainRequest() {
        assertForwarded(["GET /a HTTP/1.1", "Host: relay.example", "Connection: Upgrade, HTTP2-Settings", "Upgrade: h2c",
                         "HTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA"],
                        as: ["GET /a HTTP/1.1", "Host: orders.internal:8080"] + relayFields())
    }

    func testOnlyTheAllowedProtocolsOfAnUpgradeAreForwarded() {
        assertForwarded(["GET /ws HTTP/1.1", "Host: relay.example", "Connection: Upgrade", "Upgrade: h2c, WebSocket",
                         "Upgrade: foo/2"],
                        as: ["GET /ws HTTP/1.1", "Host: orders.internal:8080", "Connection: upgrade", "Upgrade: WebSocket"]
                            + relayFields())
    }

    func testARouteMayAllowOtherProtocolsWithTheirVersions() {
        var route = route()
        route.upgrade = ["h2c", "foo"]
        assertForwarded(["GET /a HTTP/1.1", "Host: relay.example", "Connection: Upgrade", "Upgrade: websocket, foo/2, h2c"],
                        as: ["GET /a HTTP/1.1", "Host: orders.internal:8080", "Connection: upgrade", "Upgrade: foo/2, h2c"]
                            + relayFields(), route: route)
    }

    func testAnAllowedH2CUpgradeKeepsItsHTTP2Settings() {
        var route = route()
        route.upgrade = ["h2c"]
        assertForwarded(["GET /a HTTP/1.1", "Host: relay.example", "Connection: Upgrade, HTTP2-Settings", "Upgrade: h2c",
                         "HTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA"],
                        as: ["GET /a HTTP/1.1", "Host: orders.internal:8080", "Connection: upgrade, HTTP2-Settings",
                             "Upgrade: h2c", "HTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA"] + relayFields(), route: route)
    }

    func testContentLengthIsWrittenInItsCanonicalForm() {
        assertForwarded(["POST /a HTTP/1.1", "Host: relay.example", "Content-Length: 005", "X-After: 1"], body: "hello",
                        as: ["POST /a HTTP/1.1", "Host: orders.internal:8080", "Content-Length: 5", "X-After: 1"] + relayFields())
    }

    func testChunkedRequestIsForwardedWithTheRelaysOwnChunkedFraming() {
        assertForwarded(["POST /a HTTP/1.1", "Host: relay.example", "Transfer-Encoding: chunked", "Content-Type: text/plain"],
                        as: ["POST /a HTTP/1.1", "Host: orders.internal:8080", "Content-Type: text/plain",
                             "Transfer-Encoding: chunked"] + relayFields())
    }

    func testContentLengthIsKeptForALengthFramedBody() {
        assertForwarded(["POST /a HTTP/1.1", "Host: relay.example", "Content-Length: 5"], body: "hello",
                        as: ["POST /a HTTP/1.1", "Host: orders.internal:8080", "Content-Length: 5"] + relayFields())
    }

    func testXForwardedForReplacesTheClientsValuesByDefault() {
        assertForwarded(["GET /a HTTP/1.1", "Host: relay.example", "X-Forwarded-For: 203.0.113.9"],
                        as: ["GET /a HTTP/1.1", "Host: orders.internal:8080"] + relayFields())
    }

    func testXForwardedForExtendsTheClientsValuesInOrderWhenTrusted() {
        assertForwarded(["GET /a HTTP/1.1", "Host: relay.example", "X-Forwarded-For: 203.0.113.1",
                         "X-Forwarded-For: 203.0.113.2, 203.0.113.3"],
                        as: ["GET /a HTTP/1.1", "Host: orders.internal:8080"]
                            + relayFields(xForwardedFor: "203.0.113.1, 203.0.113.2, 203.0.113.3, \(clientAddress)"),
                        trustForwardedHeaders: true)
    }

    func testClientsForwardedProtoAndHostAreReplacedByDefault() {
        assertForwarded(["GET /a HTTP/1.1", "Host: relay.example", "X-Forwarded-Proto: https", "X-Forwarded-Host: spoofed.example"],
                        as: ["GET /a HTTP/1.1", "Host: orders.internal:8080"] + relayFields())
    }

    func testClientsForwardedProtoAndHostAreKeptInPlaceWhenTrusted() {
        assertForwarded(["GET /a HTTP/1.1", "Host: relay.example", "X-Forwarded-Proto: https", "X-Forwarded-Host: public.example"],
                        as: ["GET /a HTTP/1.1", "Host: orders.internal:8080", "X-Forwarded-Proto: https",
                             "X-Forwarded-Host: public.example", "X-Forwarded-For: \(clientAddress)", "Via: 1.1 oauth-relay"],
                        trustForwardedHeaders: true)
    }

    func testViaIsAppendedAfterTheClientsVia() {
        assertForwarded(["GET /a HTTP/1.1", "Host: relay.example", "Via: 1.1 edge-proxy"],
                        as: ["GET /a HTTP/1.1", "Host: orders.internal:8080", "Via: 1.1 edge-proxy"] + relayFields())
    }

    func testHTTP10RequestIsForwardedAsHTTP11WithVia10AndNoForwardedHost() {
        assertForwarded(["GET /a HTTP/1.0", "Accept: */*"],
                        as: ["GET /a HTTP/1.1", "Host: orders.internal:8080", "Accept: */*"]
                            + relayFields(clientHost: nil, via: "Via: 1.0 oauth-relay"))
    }

    func testRouteSetHeadersReplaceClientFieldsOfTheSameNameIgnoringCase() {
        let setHeaders = [HTTPField(name: "X-Tenant", value: "acme"), HTTPField(name: "Accept", value: "application/json")]
        assertForwarded(["GET /a HTTP/1.1", "Host: relay.example", "x-tenant: other", "ACCEPT: */*", "X-Kept: 1",
                         "X-TENANT: another"],
                        as: ["GET /a HTTP/1.1", "Host: orders.internal:8080", "X-Kept: 1"] + relayFields()
                            + ["X-Tenant: acme", "Accept: application/json"],
                        route: route(setHeaders: setHeaders))
    }

    func testRouteSetHeadersWinOverTheFieldsTheRelayGenerates() {
        let setHeaders = [HTTPField(name: "Host", value: "public.example"), HTTPField(name: "Via", value: "1.1 gateway"),
                          HTTPField(name: "X-Forwarded-For", value: "10.1.2.3"),
                          HTTPField(name: "X-Forwarded-Host", value: "www.example"),
                          HTTPField(name: "X-Forwarded-Proto", value: "https")]
        assertForwarded(["GET /a HTTP/1.1", "Host: relay.example", "X-Forwarded-For: 203.0.113.9"],
                        as: ["GET /a HTTP/1.1"]
                            + ["Host: public.example", "Via: 1.1 gateway", "X-Forwarded-For: 10.1.2.3",
                               "X-Forwarded-Host: www.example", "X-Forwarded-Proto: https"],
                        route: route(setHeaders: setHeaders))
    }

    func testRequestTargetIsWrittenAsGiven() {
        assertForwarded(["GET /svc/a%7e?q=%2F HTTP/1.1", "Host: relay.example"],
                        as: ["GET /v1/a%7e?q=%2F HTTP/1.1", "Host: orders.internal:8080"] + relayFields(),
                        target: "/v1/a%7e?q=%2F")
    }

    func testNamesThatSpellARelayFieldWithUnderscoresAreDropped() {
        // CGI-style servers read X_Forwarded_For as X-Forwarded-For: it would sit beside the relay's.
        assertForwarded(["GET /a HTTP/1.1", "Host: relay.example", "X_Forwarded_For: 6.6.6.6", "x_forwarded-proto: https",
                         "Content_Length: 4", "Transfer_Encoding: chunked", "AUTHORIZATION_: x", "X_Custom_Thing: kept"],
                        as: ["GET /a HTTP/1.1", "Host: orders.internal:8080", "AUTHORIZATION_: x", "X_Custom_Thing: kept"]
                            + relayFields())
    }

    func testTheClientsForwardedFieldIsDroppedUnlessTrusted() {
        let request = ["GET /a HTTP/1.1", "Host: relay.example", "Forwarded: for=6.6.6.6;host=evil"]
        assertForwarded(request, as: ["GET /a HTTP/1.1", "Host: orders.internal:8080"] + relayFields())
        assertForwarded(request, as: ["GET /a HTTP/1.1", "Host: orders.internal:8080", "Forwarded: for=6.6.6.6;host=evil",
                                      "X-Forwarded-For: \(clientAddress)", "X-Forwarded-Proto: http",
                                      "X-Forwarded-Host: relay.example", "Via: 1.1 oauth-relay"],
                        trustForwardedHeaders: true)
    }

    func testMaxForwardsCountsDownOnOptionsAndTraceOnly() {
        assertForwarded(["OPTIONS /a HTTP/1.1", "Host: relay.example", "Max-Forwards: 3"],
                        as: ["OPTIONS /a HTTP/1.1", "Host: orders.internal:8080", "Max-Forwards: 2"] + relayFields())
        assertForwarded(["GET /a HTTP/1.1", "Host: relay.example", "Max-Forwards: 3"],
                        as: ["GET /a HTTP/1.1", "Host: orders.internal:8080", "Max-Forwards: 3"] + relayFields())
    }

    func testRequestTrailersNeverCarryWhatTheHeadDecidesOrWhatTheRouteSets() {
        let message = head("POST /a HTTP/1.1", "Host: relay.example", "Transfer-Encoding: chunked")
            + "1\r\nx\r\n0\r\nAuthorization: Bearer client\r\nHost: evil\r\nCookie: a=1\r\nX-Forwarded-For: 6.6.6.6\r\n"
            + "Expect: 100-continue\r\nX_Forwarded_For: 6.6.6.6\r\nX-Team: red\r\nX-Checksum: abc\r\n\r\n"
        let parsed = parsedHead(message)
        let plan = RoutePlan(route: route(setHeaders: [HTTPField(name: "X-Team", value: "blue")]))
        XCTAssertEqual(written { ForwardedHead.writeLastChunk(trailersOf: parsed, plan: plan, into: &$0) },
                       "0\r\nX-Checksum: abc\r\n\r\n")
    }
}
