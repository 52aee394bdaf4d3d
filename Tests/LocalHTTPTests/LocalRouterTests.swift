import LocalHTTP
import XCTest

final class LocalRouterTests: XCTestCase {
    private func router() -> LocalRouter {
        var router = LocalRouter(notFound: { LocalResponse(status: 404, body: "not found \($0.path)") },
                                 methodNotAllowed: { LocalResponse(status: 405, body: $1.joined(separator: ", ")) })
        router.add("GET", "/healthz") { _, _ in LocalResponse(status: 200, body: "alive") }
        router.add("GET", "/") { _, _ in LocalResponse(status: 200, body: "root") }
        router.add("POST", "/identities/{name}/refresh") { _, p in LocalResponse(status: 202, body: "refresh \(p["name"]!)") }
        router.add("DELETE", "/identities/{name}/token") { _, p in LocalResponse(status: 204, body: "forget \(p["name"]!)") }
        router.add("GET", "/identities/{name}/token") { _, p in LocalResponse(status: 200, body: "show \(p["name"]!)") }
        return router
    }

    private func answer(_ method: String, _ target: String) -> (Int, String) {
        let response = router().respond(to: LocalRequest(method: method, target: target))
        return (response.status, response.body)
    }

    func testALiteralPathIsAnsweredByItsHandler() {
        XCTAssertEqual(answer("GET", "/healthz").1, "alive")
        XCTAssertEqual(answer("GET", "/").1, "root")
    }

    func testTheQueryDoesNotTakePartInMatching() {
        XCTAssertEqual(answer("GET", "/healthz?verbose=1").1, "alive")
    }

    func testAParameterMatchesOneSegmentAndArrivesPercentDecoded() {
        XCTAssertEqual(answer("POST", "/identities/orders/refresh").1, "refresh orders")
        XCTAssertEqual(answer("POST", "/identities/my%20app/refresh").1, "refresh my app")
        XCTAssertEqual(answer("POST", "/identities/a/b/refresh").0, 404)
        XCTAssertEqual(answer("POST", "/identities//refresh").0, 404)
    }

    func testAParameterWithABadEscapeOrNoUTF8MatchesNothing() {
        XCTAssertEqual(answer("POST", "/identities/caf%C3%A9/refresh").1, "refresh café")
        XCTAssertEqual(answer("POST", "/identities/100%/refresh").0, 404)
        XCTAssertEqual(answer("POST", "/identities/a%zz/refresh").0, 404)
        XCTAssertEqual(answer("POST", "/identities/%FF/refresh").0, 404)
        XCTAssertEqual(answer("POST", "/identities/%20/refresh").1, "refresh  ")
    }

    func testTheSamePathWithAnotherMethodIs405WithTheAllowedMethods() {
        XCTAssertEqual(answer("PUT", "/identities/orders/token").1, "DELETE, GET")
        XCTAssertEqual(answer("POST", "/healthz").0, 405)
    }

    func testAPathNoPatternMatchesIs404() {
        XCTAssertEqual(answer("GET", "/healthz/more").0, 404)
        XCTAssertEqual(answer("GET", "/healthz/more").1, "not found /healthz/more")
        XCTAssertEqual(answer("GET", "/identities/orders").0, 404)
        XCTAssertEqual(answer("GET", "/Healthz").0, 404, "paths are case-sensitive")
    }

    func testALaterRouteWithADeadlineAnswersLaterWithinIt() {
        var router = router()
        router.addLater("POST", "/identities/{name}/logout", deadline: { parameters in
            LocalDeadline(milliseconds: 250, response: LocalResponse(status: 503, body: "late \(parameters["name"]!)"))
        }) { _, _, _ in }
        router.addLater("POST", "/identities/{name}/wait") { _, _, _ in }
        guard case .laterWithin(let deadline, _) = router.answer(to: LocalRequest(method: "POST", target: "/identities/orders/logout")) else {
            return XCTFail("no deadline")
        }
        XCTAssertEqual(deadline.milliseconds, 250)
        XCTAssertEqual(deadline.response.body, "late orders")
        guard case .later = router.answer(to: LocalRequest(method: "POST", target: "/identities/orders/wait")) else {
            return XCTFail("a deadline where none was given")
        }
    }
}
