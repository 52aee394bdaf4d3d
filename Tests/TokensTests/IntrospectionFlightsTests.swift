import Endpoints
import SafeText
@testable import Tokens
import XCTest

/// One introspection per (identity, endpoint, token) under way, whatever the number of callers;
/// a bounded number of different ones.
final class IntrospectionFlightsTests: XCTestCase {
    private let endpoint = HTTPURL(scheme: .https, host: "idp.example.com", path: "/introspect")

    private func key(slot: Int = 0, endpoint: HTTPURL? = nil, token: String = "token-1") -> IntrospectionFlightKey {
        IntrospectionFlightKey(slot: slot, endpoint: endpoint ?? self.endpoint, token: Secret(token))
    }

    func testTheFirstCallerAsksAndTheOthersJoin() {
        var flights = IntrospectionFlights<String>(maximum: 10)
        XCTAssertEqual(flights.join(key(), "a"), .first)
        XCTAssertEqual(flights.join(key(), "b"), .joined)
        XCTAssertEqual(flights.join(key(), "c"), .joined)
        XCTAssertEqual(flights.count, 1)
        XCTAssertEqual(flights.land(key()), ["a", "b", "c"])
        XCTAssertEqual(flights.count, 0)
        XCTAssertEqual(flights.land(key()), [], "landed twice")
        XCTAssertEqual(flights.join(key(), "d"), .first, "a question after the answer is a new one")
    }

    /// Another token, another asking identity or another endpoint is another question.
    func testEachPartOfTheKeyMakesAnotherQuestion() {
        var flights = IntrospectionFlights<String>(maximum: 10)
        XCTAssertEqual(flights.join(key(), "a"), .first)
        XCTAssertEqual(flights.join(key(token: "token-2"), "b"), .first)
        XCTAssertEqual(flights.join(key(slot: 1), "c"), .first)
        XCTAssertEqual(flights.join(key(endpoint: HTTPURL(scheme: .https, host: "idp.example.com", path: "/other")), "d"), .first)
        XCTAssertEqual(flights.count, 4)
        XCTAssertEqual(flights.land(key(token: "token-2")), ["b"])
    }

    func testBeyondTheMaximumANewQuestionIsRefusedButAJoinIsNot() {
        var flights = IntrospectionFlights<String>(maximum: 2)
        XCTAssertEqual(flights.join(key(token: "t1"), "a"), .first)
        XCTAssertEqual(flights.join(key(token: "t2"), "b"), .first)
        XCTAssertEqual(flights.join(key(token: "t3"), "c"), .overloaded)
        XCTAssertEqual(flights.join(key(token: "t1"), "d"), .joined)
        XCTAssertEqual(flights.land(key(token: "t3")), [], "an overloaded caller was kept")
        _ = flights.land(key(token: "t1"))
        XCTAssertEqual(flights.join(key(token: "t3"), "e"), .first)
    }

    /// The key holds the token's SHA-256, not the token.
    func testTheKeyHoldsADigestNotTheToken() {
        let made = key(token: "token-1")
        XCTAssertEqual(made.tokenDigest.count, 32)
        XCTAssertNotEqual(made.tokenDigest, Array("token-1".utf8))
        XCTAssertFalse(String(reflecting: made).contains("token-1"))
    }
}
