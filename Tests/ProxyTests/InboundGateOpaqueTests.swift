import Config
import Crypto
import Endpoints
import EventLoop
import JOSE
import JSON
@testable import OAuth2
@testable import Proxy
import SafeText
@testable import Tokens
import XCTest

/// A route's gate over opaque tokens and DPoP presentations: an opaque token is asked about once
/// (the question posted to the token loop, the requests parked on it), its answer judged for the
/// route and kept for as long as it may be reused; a DPoP proof is checked per request and never
/// twice; a token bound to a key goes only with a proof of that key.
final class InboundGateOpaqueTests: XCTestCase {
    private var loop: EventLoop!
    private var wakeup: LoopWakeup!
    private var inboxWakeup: LoopWakeup!
    private var inbox: TokenInbox!

    override func setUpWithError() throws {
        loop = try EventLoop()
        wakeup = LoopWakeup(loop: loop) {}
        inboxWakeup = LoopWakeup(loop: loop) {}
        inbox = TokenInbox(wakeup: inboxWakeup)
    }

    override func tearDownWithError() throws {
        wakeup.close()
        inboxWakeup.close()
        loop.runOnce(wait: false)
        try loop.close()
    }

    private static let now = InboundCheckTests.now

    private func gate(introspects: Bool = true, requiredScopes: [String] = ["orders.read"], dpop: InboundDPoP = InboundDPoP()) -> InboundGate {
        let rules = InboundRules(issuer: InboundCheckTests.issuer, audiences: ["orders"], requiredScopes: requiredScopes,
                                 claimHeaders: [ClaimHeader(claim: "username", header: "X-Forwarded-User")],
                                 introspection: introspects ? InboundIntrospection(identity: "billing") : nil, dpop: dpop)
        let keys = InboundKeys(issuer: InboundCheckTests.issuer, jwksUrl: nil, tlsSettings: nil, tls: nil, inbox: inbox)
        keys.publish { $0.fetched(InboundCheckTests.keys, at: 100) }
        let client = IdentityTokens(identity: Identity(name: "billing", tokenUrl: try! HTTPURL(absolute: "https://idp.example.test/token", allowsQuery: false),
                                                       clientAuth: .basic(id: "billing", secret: Secret("s"))), slot: 0)
        let source = IntrospectionSource(issuer: InboundCheckTests.issuer, configuredEndpoint: try! HTTPURL(absolute: "https://idp.example.test/introspect", allowsQuery: false),
                                         tokens: client, rules: IntrospectionRules(issuer: InboundCheckTests.issuer, audiences: ["orders"],
                                                                                   requiredScopes: requiredScopes),
                                         maximumReuseSeconds: 300, discoveryTLS: nil, inbox: inbox)
        return InboundGate(rules: rules, keys: keys, introspection: introspects ? source : nil, unixClock: { Self.now })
    }

    private func admit(_ gate: InboundGate, _ token: String, as presentation: TokenPresentation = .bearer,
                       parkedOn parked: PendingIntrospection? = nil) -> InboundGate.Outcome {
        Array(token.utf8).withUnsafeBytes {
            gate.admit($0, presentedAs: presentation, unixTime: Self.now, monotonic: 100, wake: wakeup, parkedOn: parked)
        }
    }

    /// The questions posted to the token loop since the last call.
    private func questions() -> [IntrospectionQuestion] {
        inbox.takeAll().compactMap { if case .introspect(let question) = $0 { question } else { nil } }
    }

    private static func answer(_ json: String, reusable: Int64 = 300) throws -> IntrospectionOutcome {
        let response = try IntrospectionResponse(body: Array(json.utf8))
        return .answered(response, verdict: response.verdict(IntrospectionRules(), presentedAs: .bearer, now: now), reusableSeconds: reusable)
    }

    private static let active = #"{"active": true, "scope": "orders.read", "username": "alice", "exp": \#(now + 600)}"#

    func testAnOpaqueTokenIsAskedAboutOnceAndItsAnswerKept() throws {
        let gate = gate()
        let token = "opaque-" + String(repeating: "a", count: 20)
        guard case .wait(let parked?) = admit(gate, token) else { return XCTFail("asked about: the request waits") }
        guard case .wait(let joined?) = admit(gate, token) else { return XCTFail("a second request waits on the same question") }
        XCTAssertTrue(parked === joined)
        let asked = questions()
        XCTAssertEqual(asked.count, 1, "one question per token")
        XCTAssertEqual(asked.first?.token.value, token)
        asked[0].completion(try Self.answer(Self.active))
        guard case .admitted(let caller, how: .introspected, _) = admit(gate, token, parkedOn: parked) else { return XCTFail("active") }
        XCTAssertEqual(String(decoding: caller.claimLines, as: UTF8.self), "X-Forwarded-User: alice\r\n")
        XCTAssertEqual(caller.validUntil, Self.now + 300, "reused introspectionCacheSeconds at most")
        guard case .admitted(let again, how: .cached, _) = admit(gate, token) else { return XCTFail("from the cache") }
        XCTAssertTrue(again === caller)
        XCTAssertTrue(questions().isEmpty)
    }

    func testAnInactiveTokenIsRefusedAndAskedAboutAgainNextTime() throws {
        let gate = gate()
        guard case .wait(let parked?) = admit(gate, "made-up") else { return XCTFail("asked about") }
        questions()[0].completion(try Self.answer(#"{"active": false}"#, reusable: 0))
        guard case .refused(.invalidToken(.inactive)) = admit(gate, "made-up", parkedOn: parked) else { return XCTFail("inactive: 401") }
        XCTAssertEqual(gate.cachedCount, 0)
        guard case .wait = admit(gate, "made-up") else { return XCTFail("not remembered: asked again") }
        XCTAssertEqual(questions().count, 1)
    }

    func testAMissingScopeIsA403AndAFailingEndpointA503() throws {
        let gate = gate(requiredScopes: ["orders.read", "orders.write"])
        guard case .wait(let parked?) = admit(gate, "scoped") else { return XCTFail("asked about") }
        questions()[0].completion(try Self.answer(Self.active))
        guard case .refused(.insufficientScope(missing: ["orders.write"], _)) = admit(gate, "scoped", parkedOn: parked) else {
            return XCTFail("403")
        }
        guard case .wait(let failing?) = admit(gate, "down") else { return XCTFail("asked about") }
        questions()[0].completion(.failed(.unexpectedStatus(status: 503, contentType: nil, excerpt: "internal-idp.corp: db down", retryAfter: 7)))
        guard case .refused(.introspectionUnavailable(let reason, retryAfterSeconds: 7)) = admit(gate, "down", parkedOn: failing) else {
            return XCTFail("503 with the endpoint's Retry-After")
        }
        XCTAssertEqual(reason, "the introspection endpoint gave no usable answer", "the endpoint's words stay in the log")
    }

    func testWithoutIntrospectionAnOpaqueTokenIsNotAJWT() {
        guard case .refused(.invalidToken(.notAJWT)) = admit(gate(introspects: false), "opaque-token") else { return XCTFail("401") }
        XCTAssertTrue(questions().isEmpty)
    }

    func testAJWTShapedTokenIsNeverIntrospected() {
        guard case .refused(.invalidToken(.badSignature)) = admit(gate(), InboundCheckTests.token(key: InboundCheckTests.otherKey)) else {
            return XCTFail("checked as a JWT")
        }
        XCTAssertTrue(questions().isEmpty)
    }

    // MARK: DPoP

    private static let proofKey = try! PrivateKey.generate(.ecP256)
    private static let otherProofKey = try! PrivateKey.generate(.ecP256)
    private static let uri = try! HTTPURL(absolute: "http://127.0.0.1:8180/orders/42", allowsQuery: false)

    private static func thumbprint(_ key: PrivateKey) -> String { try! JWK(publicKey: key.publicKey).thumbprint }

    private static func proof(_ key: PrivateKey = proofKey, url: String = "http://127.0.0.1:8180/orders/42", token: String) -> String {
        var random = DrawingRandom()
        let builder = try! DPoPProofBuilder(signer: JWSSigner(privateKey: key, algorithm: .es256))
        return try! builder.proof(method: "GET", url: url, accessToken: token, now: now, random: &random)
    }

    private func verifyProof(_ gate: InboundGate, _ proof: String, token: String) -> InboundGate.ProofAnswer {
        Array(proof.utf8).withUnsafeBytes {
            gate.verifyProof($0, for: DPoPProofRequest(method: "GET", uri: Self.uri, accessToken: token), now: Self.now)
        }
    }

    private func verified(_ answer: InboundGate.ProofAnswer) -> DPoPAcceptedProof? {
        if case .verified(let proof) = answer { return proof }
        return nil
    }

    func testAProofIsVerifiedOnlyForItsRequest() {
        let gate = gate()
        let token = "bound-token"
        XCTAssertEqual(verified(verifyProof(gate, Self.proof(token: token), token: token))?.keyThumbprint, Self.thumbprint(Self.proofKey))
        XCTAssertEqual(verifyProof(gate, Self.proof(url: "http://127.0.0.1:8180/orders/43", token: token), token: token),
                       .refused(.invalidProof(DPoPProofRefusal.targetMismatch.description)))
        XCTAssertEqual(verifyProof(gate, Self.proof(token: "another-token"), token: token),
                       .refused(.invalidProof(DPoPProofRefusal.accessTokenHashMismatch.description)))
    }

    /// Anyone can make proofs of a key of their own: one is remembered (and a replay refused) only
    /// once the route admits its token, bound to that key, so made-up proofs never fill the memory.
    func testAProofIsRememberedOnlyOnceItsTokenIsAdmitted() throws {
        let gate = gate(requiredScopes: [])
        let bound = Self.thumbprint(Self.proofKey)
        let token = InboundCheckTests.token(InboundCheckTests.claims(["cnf": .object([JSONMember("jkt", .string(bound))])]))
        let proof = try XCTUnwrap(verified(verifyProof(gate, Self.proof(token: token), token: token)))
        XCTAssertNotNil(verified(verifyProof(gate, Self.proof(token: token), token: token)))
        XCTAssertEqual(gate.proofs.withLock { $0.count }, 0, "verifying remembers nothing")
        for refused in [admit(gate, InboundCheckTests.token(key: InboundCheckTests.otherKey), as: .dpop(proofKeyThumbprint: bound)),
                        admit(gate, InboundCheckTests.token(), as: .dpop(proofKeyThumbprint: bound))] {
            guard case .refused = gate.recordingProof(proof, of: refused, now: Self.now) else { return XCTFail("refused stays refused") }
        }
        XCTAssertEqual(gate.proofs.withLock { $0.count }, 0, "a token the route refuses leaves no proof behind")
        guard case .admitted = gate.recordingProof(proof, of: admit(gate, token, as: .dpop(proofKeyThumbprint: bound)), now: Self.now) else {
            return XCTFail("admitted with a fresh proof")
        }
        XCTAssertEqual(gate.proofs.withLock { $0.count }, 1)
        guard case .refused(.replayedProof) = gate.recordingProof(proof, of: admit(gate, token, as: .dpop(proofKeyThumbprint: bound)),
                                                                  now: Self.now) else {
            return XCTFail("the same proof again is a replay")
        }
    }

    func testABoundTokenGoesOnlyWithAProofOfItsKey() {
        let gate = gate(requiredScopes: [])
        let bound = Self.thumbprint(Self.proofKey)
        let token = InboundCheckTests.token(InboundCheckTests.claims(["cnf": .object([JSONMember("jkt", .string(bound))])]))
        guard case .refused(.bindingMismatch(.boundTokenAsBearer)) = admit(gate, token) else { return XCTFail("bound token as Bearer") }
        guard case .admitted = admit(gate, token, as: .dpop(proofKeyThumbprint: bound)) else { return XCTFail("with a proof of its key") }
        guard case .refused(.bindingMismatch(.anotherKey)) = admit(gate, token, as: .dpop(proofKeyThumbprint: Self.thumbprint(Self.otherProofKey))) else {
            return XCTFail("a proof of another key, judged from the cache too")
        }
        guard case .refused(.bindingMismatch(.boundTokenAsBearer)) = admit(gate, token) else { return XCTFail("cached, still refused as Bearer") }
        guard case .refused(.bindingMismatch(.unboundToken)) = admit(gate, InboundCheckTests.token(), as: .dpop(proofKeyThumbprint: bound)) else {
            return XCTFail("a proof with a token bound to no key")
        }
    }
}

/// The system's generator with a count of its draws: a generator with storage. An `inout` of an
/// empty one (SystemRandomNumberGenerator has no stored property) hands ThreadSanitizer's access
/// checks an address with no memory behind it, and `make test-tsan`-style runs crash there.
private struct DrawingRandom: RandomNumberGenerator {
    private var system = SystemRandomNumberGenerator()
    private(set) var draws = 0

    mutating func next() -> UInt64 {
        draws += 1
        return system.next()
    }
}
