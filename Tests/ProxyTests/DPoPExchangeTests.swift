import Config
import Endpoints
import HTTP1
import HTTPFields
import JOSE
import OAuth2
@testable import Proxy
@testable import Tokens
import XCTest

/// DPoP-bound tokens on the data path: a `use_dpop_nonce` answer is replayed once with the same
/// token (a refused token is something else), and the head carries `Authorization: DPoP` with a
/// proof.
final class DPoPExchangeTests: XCTestCase {
    private let get = head("GET /orders/1 HTTP/1.1", "Host: relay")
    private let nonceChallenge = head("HTTP/1.1 401 Unauthorized", #"WWW-Authenticate: DPoP error="use_dpop_nonce""#,
                                      "DPoP-Nonce: n-2", "Content-Length: 7")
    private let refusal = head("HTTP/1.1 401 Unauthorized", #"WWW-Authenticate: DPoP error="invalid_token""#, "Content-Length: 0")

    /// A route whose identity binds its tokens with DPoP (a generated key).
    static func dpopPlan(retryOnStatus: [Int] = [401], upstream: String = "http://orders.internal:8080", pathPrefix: String = "/",
                         stripPrefix: Bool = false, setHeaders: [HTTPField] = []) -> RoutePlan {
        var identity = Identity(name: "svc", tokenUrl: HTTPURL(scheme: .http, host: "127.0.0.1", port: 9, path: "/token"),
                                grant: .clientCredentials, clientAuth: .publicClient(id: "svc"))
        identity.dpop = .generatedKey(.es256)
        var route = route(to: upstream, pathPrefix: pathPrefix, stripPrefix: stripPrefix, setHeaders: setHeaders)
        route.identity = "svc"
        route.retryOnStatus = retryOnStatus
        return RoutePlan(route: route, identity: IdentityTokens(identity: identity, slot: 0))
    }

    /// A cached `DPoP` token of `plan`'s identity, with this test's proof writer.
    static func dpopToken(_ value: String, plan: RoutePlan, proofs: WorkerProofs = WorkerProofs()) throws -> WorkerTokens.CachedToken {
        let tokens = try XCTUnwrap(plan.identity)
        let access = AccessToken(value: value, type: "DPoP", issuedAt: 0, expiresAt: 100, refreshAt: 50)
        return WorkerTokens.CachedToken(value: value, bytes: Array(value.utf8), slot: 0, generation: 1, expiresAtMilliseconds: .max,
                                        dpop: try proofs.proofing(for: access, of: tokens).get())
    }

    func testANonceChallengeIsReplayedOnceWithTheSameToken() throws {
        let plan = Self.dpopPlan()
        var driver = ExchangeDriver()
        _ = driver.request(get, on: plan, token: .inject(try Self.dpopToken("tok", plan: plan)))
        driver.requestEnds()
        guard case .discard = driver.response(nonceChallenge) else { return XCTFail("the challenge is dropped, not refused") }
        XCTAssertEqual(driver.exchange.current.response.dpopChallengeNonce, Array("n-2".utf8), "the replay's proof carries it")
        XCTAssertFalse(driver.exchange.releaseHead(), "nothing of it reaches the client")
        guard case .drop = driver.exchange.responseBody(7) else { return XCTFail("its body is drained") }
        guard case (.refused, .replayWithNonce) = driver.responseEnds() else { return XCTFail("sent again at once") }
        XCTAssertFalse(driver.exchange.isWaitingForToken, "no new token is needed")
        XCTAssertEqual(driver.exchange.token?.value, "tok")
        XCTAssertTrue(driver.exchange.resendsKeptBody)
        // A second challenge goes to the client as it is: no loop, and no token refusal either.
        XCTAssertEqual(respondFraming(driver.response(nonceChallenge)), .contentLength)
        XCTAssertEqual(driver.exchange.current.record.status, 401)
    }

    func testARefusedDPoPTokenIsStillARefusal() throws {
        let plan = Self.dpopPlan()
        var driver = ExchangeDriver()
        _ = driver.request(get, on: plan, token: .inject(try Self.dpopToken("tok", plan: plan)))
        driver.requestEnds()
        guard case .reportRefusedToken(let refused) = driver.exchange.responseHead(parsedHead(refusal, kind: .response)) else {
            return XCTFail("a 401 without a nonce challenge reports the token refused")
        }
        XCTAssertEqual(refused.value, "tok")
    }

    func testAfterANonceReplayARefusalStillFetchesANewToken() throws {
        let plan = Self.dpopPlan()
        var driver = ExchangeDriver()
        _ = driver.request(get, on: plan, token: .inject(try Self.dpopToken("tok", plan: plan)))
        driver.requestEnds()
        _ = driver.response(nonceChallenge)
        _ = driver.responseEnds()
        guard case .discard = driver.response(refusal) else { return XCTFail("the refusal is replayed with a new token") }
        guard case (.refused, .replay) = driver.responseEnds() else { return XCTFail("replayed after the new token") }
        XCTAssertTrue(driver.exchange.isWaitingForToken)
    }

    func testABearerTokenIsNeverReplayedForANonce() {
        var driver = ExchangeDriver()
        _ = driver.request(get, on: Self.dpopPlan(), token: .inject(ExchangeDriver.token("bearer")))
        driver.requestEnds()
        guard case .reportRefusedToken = driver.exchange.responseHead(parsedHead(nonceChallenge, kind: .response)) else {
            return XCTFail("a Bearer token has no proof to renew: the 401 is a refusal")
        }
    }

    func testAKeptBodyIsReplayedForANonceEvenWithoutRetryOnStatus() throws {
        let plan = Self.dpopPlan(retryOnStatus: [])
        var driver = ExchangeDriver()
        _ = driver.request(head("POST /orders HTTP/1.1", "Host: relay", "Content-Length: 5"), on: plan,
                           token: .inject(try Self.dpopToken("tok", plan: plan)))
        XCTAssertEqual(driver.exchange.sentRequestBody(5), .keep, "a DPoP route keeps bodies for a nonce replay")
        driver.requestEnds()
        guard case .discard = driver.response(nonceChallenge) else { return XCTFail("replayed with its kept body") }
        guard case (.refused, .replayWithNonce) = driver.responseEnds() else { return XCTFail("sent again") }
        XCTAssertTrue(driver.exchange.resendsKeptBody)
    }

    func testABodyThatCannotBeReplayedGetsTheChallengeThrough() throws {
        let plan = Self.dpopPlan()
        var driver = ExchangeDriver()
        _ = driver.request(head("POST /orders HTTP/1.1", "Host: relay", "Content-Length: \(Exchange.maxReplayBodyBytes + 1)"),
                           on: plan, token: .inject(try Self.dpopToken("tok", plan: plan)))
        driver.requestEnds()
        XCTAssertEqual(respondFraming(driver.response(nonceChallenge)), .contentLength, "the client gets the 401")
    }

    func testAChallengeBeforeTheRequestEndedGoesToTheClient() throws {
        let plan = Self.dpopPlan()
        var driver = ExchangeDriver()
        _ = driver.request(head("POST /orders HTTP/1.1", "Host: relay", "Content-Length: 5"), on: plan,
                           token: .inject(try Self.dpopToken("tok", plan: plan)))
        XCTAssertEqual(respondFraming(driver.response(nonceChallenge)), .contentLength)
        XCTAssertFalse(driver.exchange.keepAlive, "the rest of the body cannot be told from a next request")
    }
}
