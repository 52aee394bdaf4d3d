import Config
import EventLoop
import JOSE
@testable import Proxy
@testable import Tokens
import XCTest

/// A route's gate over the check: a token is verified once, then found by its digest until it
/// expires; a token the keys cannot verify parks the request until a fetch ends.
final class InboundGateTests: XCTestCase {
    private var loop: EventLoop!
    private var wakeup: LoopWakeup!
    private var inboxWakeup: LoopWakeup!
    private var fetchesPosted = 0

    override func setUpWithError() throws {
        loop = try EventLoop()
        wakeup = LoopWakeup(loop: loop) {}
        inboxWakeup = LoopWakeup(loop: loop) { [unowned self] in fetchesPosted += 1 }
    }

    override func tearDownWithError() throws {
        wakeup.close()
        inboxWakeup.close()
        loop.runOnce(wait: false)
        try loop.close()
    }

    private func gate(requiredScopes: [String] = ["orders.read"], claimHeaders: [ClaimHeader] = []) -> InboundGate {
        let keys = InboundKeys(issuer: InboundCheckTests.issuer, jwksUrl: nil, tlsSettings: nil, tls: nil,
                               inbox: TokenInbox(wakeup: inboxWakeup))
        return InboundGate(rules: InboundRules(issuer: InboundCheckTests.issuer, audiences: ["orders"], requiredScopes: requiredScopes,
                                               claimHeaders: claimHeaders), keys: keys)
    }

    private func admit(_ gate: InboundGate, _ token: String, at now: Int64 = InboundCheckTests.now) -> InboundGate.Outcome {
        Array(token.utf8).withUnsafeBytes { gate.admit($0, unixTime: now, monotonic: 100, wake: wakeup) }
    }

    private func fetched(_ gate: InboundGate) {
        gate.keys!.publish { $0.fetched(InboundCheckTests.keys, at: 100) }
    }

    func testATokenIsVerifiedOnceThenFoundUntilItExpires() {
        let gate = gate(claimHeaders: [ClaimHeader(claim: "sub", header: "X-Forwarded-User")])
        let token = InboundCheckTests.token()
        guard case .wait = admit(gate, token) else { return XCTFail("no keys yet: the request waits for a fetch") }
        for _ in 0..<5 { loop.runOnce(wait: false) }
        XCTAssertEqual(fetchesPosted, 1)
        fetched(gate)
        guard case .admitted(let first, how: .checked, _) = admit(gate, token) else { return XCTFail("verified") }
        XCTAssertEqual(first.token.value, token)
        XCTAssertEqual(first.token.expiresAt, InboundCheckTests.now + 300)
        XCTAssertEqual(String(decoding: first.claimLines, as: UTF8.self), "X-Forwarded-User: alice\r\n")
        guard case .admitted(let again, how: .cached, _) = admit(gate, token) else { return XCTFail("from the cache") }
        XCTAssertTrue(again === first)
        XCTAssertEqual(gate.cachedCount, 1)
        // Past exp plus the clock skew (60 s) the entry is gone and the token is checked anew: expired.
        guard case .refused(.invalidToken(.expired)) = admit(gate, token, at: InboundCheckTests.now + 360) else {
            return XCTFail("expired")
        }
        XCTAssertEqual(gate.cachedCount, 0)
    }

    func testAMissingScopeIsRememberedAndAForgedTokenIsNot() {
        let gate = gate(requiredScopes: ["orders.write"])
        fetched(gate)
        let token = InboundCheckTests.token()
        for _ in 0..<3 {
            guard case .refused(.insufficientScope(missing: ["orders.write"], required: ["orders.write"])) = admit(gate, token) else {
                return XCTFail("403")
            }
        }
        XCTAssertEqual(gate.cachedCount, 1, "the verdict is kept: no signature check per request")
        guard case .refused(.invalidToken(.badSignature)) = admit(gate, InboundCheckTests.token(key: InboundCheckTests.otherKey)) else {
            return XCTFail("forged")
        }
        XCTAssertEqual(gate.cachedCount, 1, "a forged token is never stored")
    }

    func testAnUnknownKidRightAfterAFetchIsNoSuchKey() {
        let gate = gate()
        fetched(gate)
        guard case .wait = admit(gate, InboundCheckTests.token(keyID: "rotated")) else {
            return XCTFail("keys read by no request yet: one fetch for the new kid")
        }
        gate.keys!.publish { $0.fetched(InboundCheckTests.keys, at: 100) }
        guard case .refused(.invalidToken(.unknownKey)) = admit(gate, InboundCheckTests.token(keyID: "rotated")) else {
            return XCTFail("within the interval: no such key")
        }
    }
}
