@testable import Config
import XCTest

/// A key given twice in one object is reported at its second occurrence, whether the object is
/// small (its keys compared in place) or large (hashed): the same errors either way.
final class RepeatedKeyTests: XCTestCase {
    /// A route whose `setHeaders` holds `count` headers `X-0`… with `repeated` given again at the end.
    private func headers(count: Int, repeating repeated: [Int]) -> String {
        let members = (0..<count).map { #""X-\#($0)": "v""# } + repeated.map { #""X-\#($0)": "again""# }
        return routeJSON(#""setHeaders": { \#(members.joined(separator: ", ")) }"#)
    }

    func testARepeatedKeyIsReportedInSmallAndLargeObjects() {
        for count in [1, 3, ObjectReader.keysComparedInPlace - 1, ObjectReader.keysComparedInPlace, 40] {
            let errors = describe(configErrors(headers(count: count, repeating: [0, count - 1])))
            let expected = Set([0, count - 1]).sorted().map { #"$.routes[0].setHeaders.X-\#($0): duplicate key "X-\#($0)""# }
            XCTAssertEqual(errors, expected + (count == 1 ? [#"$.routes[0].setHeaders.X-0: duplicate key "X-0""#] : []),
                           "\(count) headers")
        }
    }

    func testTheFirstOccurrenceIsTheOneKept() throws {
        for count in [2, 40] {
            var json = headers(count: count, repeating: [1])
            json = json.replacingOccurrences(of: #""X-1": "again""#, with: #""X-1": "again", "X-1": "thrice""#)
            let errors = describe(configErrors(json))
            XCTAssertEqual(errors, Array(repeating: #"$.routes[0].setHeaders.X-1: duplicate key "X-1""#, count: 2), "\(count) headers")
        }
        let route = try XCTUnwrap(decodeConfig(headers(count: 40, repeating: [])).routes.first)
        XCTAssertEqual(route.setHeaders.count, 40)
    }

    func testAnUnknownKeyGivenTwiceIsUnknownThenRepeated() {
        XCTAssertEqual(describe(configErrors(routeJSON(#""nme": 1, "nme": 2"#))),
                       [#"$.routes[0].nme: unknown key "nme" (did you mean "name"?)"#, #"$.routes[0].nme: duplicate key "nme""#])
    }
}

/// Routes that name one upstream text share its parse: the memo gives what parsing each anew gives.
final class UpstreamURLMemoTests: XCTestCase {
    private func parsed(_ text: String) -> Result<UpstreamURL, InvalidValue> {
        do throws(InvalidValue) { return .success(try UpstreamURL.parse(text)) } catch { return .failure(error) }
    }

    func testTheMemoGivesWhatParsingGivesForEveryText() {
        let texts = ["http://127.0.0.1:9001", "https://API.example.com:443/v1/", "http://svc/a/../b", "ftp://x", "http://",
                     "http://a@b", "https://[::1]:8443", "http://h/?q", "http://h:99999", "http://127.0.0.1:9001"]
        var memo = UpstreamURLMemo()
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            let text = texts.randomElement(using: &generator)!
            let fromMemo: Result<UpstreamURL, InvalidValue>
            do throws(InvalidValue) { fromMemo = .success(try memo.parse(text)) } catch { fromMemo = .failure(error) }
            switch (fromMemo, parsed(text)) {
            case (.success(let a), .success(let b)): XCTAssertEqual(a, b, text)
            case (.failure(let a), .failure(let b)): XCTAssertEqual(a.message, b.message, text)
            default: XCTFail("\(text): memo \(fromMemo), parse \(parsed(text))")
            }
        }
    }

    func testRoutesWithOneBadUpstreamEachReportIt() {
        let json = #"{ "routes": [ { "upstream": "ftp://x", "match": { "pathPrefix": "/a/" } }, { "upstream": "ftp://x", "match": { "pathPrefix": "/b/" } } ] }"#
        let errors = describe(configErrors(json))
        XCTAssertEqual(errors.count, 2)
        XCTAssertEqual(errors.map { $0.prefix(16) }, ["$.routes[0].upst", "$.routes[1].upst"])
        XCTAssertEqual(Set(errors.map { $0.drop(while: { $0 != ":" }) }).count, 1)
    }
}

/// A name or a match used by several routes names the first route that used it, every time.
final class RepeatedRouteTests: XCTestCase {
    func testEveryLaterRouteWithTheSameMatchNamesTheFirst() {
        let json = #"{ "routes": [ { "upstream": "http://a" }, { "upstream": "http://b", "match": { "pathPrefix": "/" } }, "#
            + #"{ "upstream": "http://c", "match": { "pathPrefix": "/" } } ] }"#
        XCTAssertEqual(describe(configErrors(json)), ["$.routes[1].match: routes[0] has the same match, so this route would never be used",
                                                      "$.routes[2].match: routes[0] has the same match, so this route would never be used"])
    }

    func testEveryLaterRouteWithTheSameNameNamesTheFirst() {
        let routes = (0..<3).map { #"{ "name": "api", "upstream": "http://a", "match": { "pathPrefix": "/\#($0)/" } }"# }
        XCTAssertEqual(describe(configErrors(#"{ "routes": [ \#(routes.joined(separator: ", ")) ] }"#)),
                       [#"$.routes[1].name: route name "api" is already used by routes[0]"#,
                        #"$.routes[2].name: route name "api" is already used by routes[0]"#])
    }
}

/// A grant's keys set on an identity of another grant are named, in either form (`…File`).
final class RejectedGrantKeyTests: XCTestCase {
    func testAPasswordFileOnAClientCredentialsIdentityIsRejected() {
        let errors = describe(configErrors(identityJSON(#""grant": "client_credentials", "clientId": "c", "clientSecret": "s", "passwordFile": "/p""#)))
        XCTAssertTrue(errors.contains("$.identities.x.passwordFile: passwordFile is only used by the password grant, not by the client_credentials grant"),
                      "\(errors)")
    }
}
