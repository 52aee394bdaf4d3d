import Endpoints
import HTTPClient
import Logging
import LoopTestSupport
import OAuth2
@testable import Tokens
import XCTest

/// How stopping ends the requests to IdPs (IdPClient.swift): nothing new is sent, a cancelled
/// request's completion never runs, and a caller that asked to hear of the stop does.
final class IdPClientStopTests: XCTestCase {
    /// Nothing listens there: a request sent ends with a refused connection.
    private let url = HTTPURL(scheme: .http, host: "127.0.0.1", port: 9, path: "/token")
    private var identity: Identity {
        Identity(name: "orders", tokenUrl: url, grant: .clientCredentials, clientAuth: .publicClient(id: "orders-relay"))
    }

    private func client(_ test: LeakCheckedLoop) -> IdPClient {
        IdPClient(loop: test.loop, limits: HTTPClientLimits(), logger: Logger(label: "test"), observer: nil)
    }

    func testOnceStoppedNoRequestIsSentAndACallerThatAskedHearsIt() throws {
        let test = try LeakCheckedLoop()
        let idp = client(test)
        let tokens = IdentityTokens(identity: identity, slot: 0)
        let request = try XCTUnwrap(tokens.update { $0.startFetchIfDue(at: 0) })
        idp.stop(lettingFinish: { _ in false })
        XCTAssertTrue(idp.isStopped)

        var heard = 0
        idp.send(request, for: tokens, stopped: { heard += 1 }) { _, _ in XCTFail("a request was sent after the stop") }
        idp.getJSON(url, for: tokens, stopped: { heard += 1 }) { _ in XCTFail("a GET was sent after the stop") }
        idp.requestToken(request, for: tokens) { _ in XCTFail("a token request was sent after the stop") }
        XCTAssertEqual(heard, 2)
        XCTAssertFalse(idp.hasRequest(slot: 0))
        test.closeAndCheckForLeaks()
    }

    func testARequestStoppingCancelsIsNeverAnswered() throws {
        let test = try LeakCheckedLoop()
        let idp = client(test)
        let tokens = IdentityTokens(identity: identity, slot: 0)
        var stopped = false
        idp.getJSON(url, for: tokens, stopped: { stopped = true }) { _ in XCTFail("a cancelled request was answered") }
        XCTAssertTrue(idp.hasRequest(slot: 0))

        idp.stop(lettingFinish: { _ in true })  // A GET is never a token request: cancelled all the same.
        test.run(until: "the caller heard of the stop") { stopped }
        XCTAssertFalse(idp.hasRequest(slot: 0))
        test.closeAndCheckForLeaks()
    }

    /// A token request whose slot holds its store lock or shared lease is let finish: its answer
    /// may carry a refresh token the IdP just rotated.
    func testATokenRequestLetFinishIsStillUnderWay() throws {
        let test = try LeakCheckedLoop()
        let idp = client(test)
        let tokens = IdentityTokens(identity: identity, slot: 0)
        let request = try XCTUnwrap(tokens.update { $0.startFetchIfDue(at: 0) })
        var answered = false
        idp.requestToken(request, for: tokens) { _ in answered = true }
        idp.stop(lettingFinish: { $0 == 0 })
        XCTAssertTrue(idp.hasRequest(slot: 0), "the token request was cancelled")
        test.run(until: "the token request ended") { answered }
        XCTAssertFalse(idp.hasRequest(slot: 0))
        test.closeAndCheckForLeaks()
    }
}
