import Config
import Endpoints
import OAuth2
@testable import Proxy
@testable import Tokens
import Routing
import XCTest

/// `"inject": {"query": "access_token"}`: the upstream sees exactly one `access_token`, the
/// relay's, after the rest of the client's query as the client sent it.
final class QueryInjectionTests: XCTestCase {
    private let token = "T0k.en~"

    private func plan(stripPrefix: Bool = false) -> RoutePlan {
        let upstream = UpstreamURL(parsing: "http://orders.internal:8080")!
        let route = Route(name: "orders", match: RouteMatch(pathPrefix: stripPrefix ? "/svc/" : "/"), upstream: upstream,
                          identity: "orders", stripPrefix: stripPrefix, inject: .query(name: "access_token"))
        let identity = Identity(name: "orders", tokenUrl: HTTPURL(scheme: .http, host: "127.0.0.1", port: 9, path: "/token"),
                                grant: .clientCredentials, clientAuth: .publicClient(id: "orders-relay"))
        return RoutePlan(route: route, identity: IdentityTokens(identity: identity, slot: 0))
    }

    /// The request-target sent upstream for the client's `target`, with `token` injected.
    private func upstreamTarget(_ target: String, token: String? = nil, stripPrefix: Bool = false) -> String {
        let plan = plan(stripPrefix: stripPrefix)
        return withBytes(target) { raw in
            let target = RequestTarget(raw)!
            var normalized: [UInt8] = []
            XCTAssertTrue(RequestPath.normalize(target.path, into: &normalized))
            var out: [UInt8] = []
            var scratch = RoutePlan.TargetScratch()
            Array((token ?? self.token).utf8).withUnsafeBytes { token in
                normalized.withUnsafeBytes {
                    plan.writeUpstreamTarget(rawPath: target.path, normalizedPath: $0, queryWithMark: target.queryWithMark,
                                             token: token, into: &out, scratch: &scratch)
                }
            }
            return String(decoding: out, as: UTF8.self)
        }
    }

    func testTheTokenIsTheWholeQueryWhenThereWasNone() {
        XCTAssertEqual(upstreamTarget("/x"), "/x?access_token=T0k.en~")
        XCTAssertEqual(upstreamTarget("/x?"), "/x?access_token=T0k.en~")
    }

    func testTheTokenFollowsTheClientsQuery() {
        XCTAssertEqual(upstreamTarget("/x?a=1&b=%7e"), "/x?a=1&b=%7e&access_token=T0k.en~")
    }

    func testTheClientsOwnAccessTokenIsRemoved() {
        XCTAssertEqual(upstreamTarget("/x?access_token=evil"), "/x?access_token=T0k.en~")
        XCTAssertEqual(upstreamTarget("/x?a=1&access_token=evil&b=2"), "/x?a=1&b=2&access_token=T0k.en~")
    }

    func testEveryOneOfSeveralIsRemoved() {
        XCTAssertEqual(upstreamTarget("/x?access_token=1&a=1&access_token=2&access_token=3"), "/x?a=1&access_token=T0k.en~")
    }

    func testANameThatDecodesToTheParameterNameIsRemoved() {
        XCTAssertEqual(upstreamTarget("/x?access%5Ftoken=1&%61ccess_token=2&access%5ftoken=3&a=1"), "/x?a=1&access_token=T0k.en~")
    }

    func testWithoutAValueOrWithAnEmptyOneItIsRemovedToo() {
        XCTAssertEqual(upstreamTarget("/x?access_token&a=1&access_token="), "/x?a=1&access_token=T0k.en~")
    }

    func testOtherNamesStayEvenWhenTheyLookAlike() {
        let kept = "ACCESS_TOKEN=1&access_token2=2&xaccess_token=3&access_token[]=4&access+token=5&access_token%3D=6&q=access_token%3Dx"
        XCTAssertEqual(upstreamTarget("/x?" + kept), "/x?" + kept + "&access_token=T0k.en~")
    }

    func testTheRestIsKeptByteForByteEmptyParametersIncluded() {
        XCTAssertEqual(upstreamTarget("/x?&a=%zz&&access_token=1&b=/../c&"), "/x?&a=%zz&&b=/../c&&access_token=T0k.en~")
    }

    func testTheInjectedTokenIsFormEncoded() {
        XCTAssertEqual(upstreamTarget("/x?access_token=a", token: "a b+c/="), "/x?access_token=a+b%2Bc%2F%3D")
    }

    func testItWorksOnARouteThatStripsItsPrefix() {
        XCTAssertEqual(upstreamTarget("/svc/x?access_token=evil&a=1", stripPrefix: true), "/x?a=1&access_token=T0k.en~")
    }

    func testParameterNamesAreComparedDecoded() {
        let name = Array("access_token".utf8)
        for (parameter, matches) in [("access_token=1", true), ("access_token", true), ("access%5Ftoken=", true),
                                     ("access_toke", false), ("access_tokenn", false), ("access_token%", false),
                                     ("", false), ("=access_token", false)] {
            XCTAssertEqual(withBytes(parameter) { QueryParameters.nameDecodes($0, to: name) }, matches, parameter)
        }
    }
}
