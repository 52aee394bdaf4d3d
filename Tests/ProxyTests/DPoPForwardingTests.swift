import Config
import Endpoints
import HTTPFields
import JOSE
import OAuth2
@testable import Proxy
import Routing
@testable import Tokens
import XCTest

/// What goes upstream with a `DPoP` token: `Authorization: DPoP` and a proof per request whose
/// `htu` is the URL the upstream receives, with `ath` and the upstream's latest nonce.
final class DPoPForwardingTests: XCTestCase {
    private var forwarding = ForwardedHead.Forwarding(clientAddress: Array("192.0.2.7".utf8), trustForwardedHeaders: false,
                                                      viaSuffix: viaSuffix)

    /// The target `plan` sends upstream for the client's `target` (as ClientConnection does).
    private func upstreamTarget(_ target: String, plan: RoutePlan) -> [UInt8] {
        withBytes(target) { raw in
            let target = RequestTarget(raw)!
            var normalized: [UInt8] = []
            XCTAssertTrue(RequestPath.normalize(target.path, into: &normalized))
            var out: [UInt8] = [], scratch = RoutePlan.TargetScratch()
            if plan.forwardsTargetVerbatim { return Array(target.originForm!) }
            normalized.withUnsafeBytes {
                plan.writeUpstreamTarget(rawPath: target.path, normalizedPath: $0, queryWithMark: target.queryWithMark, into: &out,
                                         scratch: &scratch)
            }
            return out
        }
    }

    /// The proof a worker signs for `method` `target` on `plan`, read back.
    private func proof(_ target: String, method: String = "GET", plan: RoutePlan, token: WorkerTokens.CachedToken,
                       proofs: WorkerProofs) throws -> JWS {
        try versionedProof(target, method: method, plan: plan, token: token, proofs: proofs).proof
    }

    /// A proof and the version of the shared nonce in force as it was made (`challengedNonce`: the
    /// replay after a `use_dpop_nonce` answer).
    private func versionedProof(_ target: String, method: String = "GET", plan: RoutePlan, token: WorkerTokens.CachedToken,
                                proofs: WorkerProofs, challengedNonce: [UInt8]? = nil) throws -> (proof: JWS, nonceVersion: UInt64) {
        let sent = upstreamTarget(target, plan: plan)
        var nonceVersion = UInt64.max
        let text = try Array(method.utf8).withUnsafeBytes { method in
            try sent.withUnsafeBytes { target in
                try proofs.withProof(try XCTUnwrap(token.dpop), method: method, plan: plan, target: target,
                                     challengedNonce: challengedNonce, nonceVersion: &nonceVersion) {
                    String(decoding: $0, as: UTF8.self)
                }
            }
        }
        return (try JWS(compact: text), nonceVersion)
    }

    func testHTUIsTheURLTheUpstreamReceives() throws {
        let cases: [(upstream: String, prefix: String, strip: Bool, setHeaders: [HTTPField], target: String, htu: String)] = [
            ("http://orders.internal:8080", "/", false, [], "/a/b?q=1", "http://orders.internal:8080/a/b"),
            ("https://api.internal:8443/v1", "/orders/", true, [], "/orders/42?x=1#f", "https://api.internal:8443/v1/42"),
            ("https://api.internal/base", "/", false, [], "/x%7Ey", "https://api.internal/base/x%7Ey"),
            ("https://api.internal:443", "/svc/", true, [], "/svc/", "https://api.internal/"),
            ("http://10.0.0.1:9000", "/", false, [HTTPField(name: "Host", value: "public.example")], "/p",
             "http://public.example/p"),
        ]
        for item in cases {
            let plan = DPoPExchangeTests.dpopPlan(upstream: item.upstream, pathPrefix: item.prefix, stripPrefix: item.strip,
                                                  setHeaders: item.setHeaders)
            let proofs = WorkerProofs()
            let jws = try proof(item.target, plan: plan, token: DPoPExchangeTests.dpopToken("tok", plan: plan, proofs: proofs),
                                proofs: proofs)
            XCTAssertEqual(try JWTClaims(payload: jws.payload)["htu"]?.string, item.htu, item.target)
        }
    }

    func testTheProofIsSignedByTheIdentitysKeyForThisTokenAndRequest() throws {
        let plan = DPoPExchangeTests.dpopPlan()
        let proofs = WorkerProofs()
        let token = try DPoPExchangeTests.dpopToken("tok-123", plan: plan, proofs: proofs)
        let jws = try proof("/orders/7", method: "DELETE", plan: plan, token: token, proofs: proofs)
        let key = try XCTUnwrap(plan.identity?.dpop?.get())
        let jwk = try XCTUnwrap(jws.header.jwk)
        XCTAssertEqual(jwk.thumbprint, key.thumbprint, "the key a bound token's cnf.jkt names")
        XCTAssertNoThrow(try jws.verify(with: JWSVerificationKey(jwk: jwk)))
        let claims = try JWTClaims(payload: jws.payload)
        XCTAssertEqual(claims["htm"]?.string, "DELETE")
        XCTAssertEqual(claims["ath"]?.string, DPoPProofBuilder.accessTokenHash("tok-123"))
        XCTAssertNil(claims.nonce, "no nonce until the upstream sends one")
        let iat = try XCTUnwrap(claims.issuedAt)
        XCTAssertLessThan(abs(iat - Int64(Date().timeIntervalSince1970)), 5)
    }

    func testTheUpstreamsLatestNonceGoesIntoTheNextProofsOfItsRoute() throws {
        let plan = DPoPExchangeTests.dpopPlan()
        let proofs = WorkerProofs()
        let token = try DPoPExchangeTests.dpopToken("tok", plan: plan, proofs: proofs)
        withBytes("n-1") { proofs.remember($0, for: plan, provedAt: 0) }
        withBytes("n-2") { proofs.remember($0, for: plan, provedAt: 1) }
        XCTAssertEqual(try JWTClaims(payload: proof("/a", plan: plan, token: token, proofs: proofs).payload).nonce, "n-2")
        // Another identity's route at the same position (after a reload) has not heard that nonce.
        let other = DPoPExchangeTests.dpopPlan()
        XCTAssertNil(proofs.nonce(for: other))
        // A reload that keeps the identity and the upstream keeps the nonce, in every plan of it.
        let replanned = RoutePlan(route: plan.route, position: 1, identity: plan.identity)
        proofs.keepOnly(slots: [0])
        XCTAssertEqual(proofs.nonce(for: replanned), Array("n-2".utf8))
        XCTAssertEqual(proofs.nonce(for: plan), Array("n-2".utf8))
    }

    func testANonceOneWorkerHearsIsInEveryWorkersNextProof() throws {
        let plan = DPoPExchangeTests.dpopPlan()
        let first = WorkerProofs(), second = WorkerProofs()
        let firstToken = try DPoPExchangeTests.dpopToken("tok", plan: plan, proofs: first)
        let secondToken = try DPoPExchangeTests.dpopToken("tok", plan: plan, proofs: second)
        let (unnonced, unnoncedVersion) = try versionedProof("/a", plan: plan, token: secondToken, proofs: second)
        XCTAssertNil(try JWTClaims(payload: unnonced.payload).nonce)
        withBytes("n-1") { first.remember($0, for: plan, provedAt: unnoncedVersion) }
        let (nonced, noncedVersion) = try versionedProof("/b", plan: plan, token: secondToken, proofs: second)
        XCTAssertEqual(try JWTClaims(payload: nonced.payload).nonce, "n-1")
        withBytes("n-2") { second.remember($0, for: plan, provedAt: noncedVersion) }
        XCTAssertEqual(try JWTClaims(payload: proof("/c", plan: plan, token: firstToken, proofs: first).payload).nonce, "n-2")
        // Another route of the identity to the same upstream origin shares it; one to another origin does not.
        var sameOrigin = plan.route
        sameOrigin.match.pathPrefix = "/other/"
        XCTAssertEqual(second.nonce(for: RoutePlan(route: sameOrigin, position: 1, identity: plan.identity)), Array("n-2".utf8))
        var otherOrigin = route(to: "http://billing.internal:8080")
        otherOrigin.identity = "svc"
        XCTAssertNil(first.nonce(for: RoutePlan(route: otherOrigin, position: 2, identity: plan.identity)))
    }

    /// The upstream rotates n-1 -> n-2 while both workers have a request out with n-1: the first
    /// worker hears n-2; the second then reads its answer, which the upstream made before the
    /// rotation and which still names n-1. Every worker's next proof keeps n-2.
    func testAnAnswerMadeBeforeARotationAnotherWorkerHeardKeepsTheNewNonce() throws {
        let plan = DPoPExchangeTests.dpopPlan()
        let first = WorkerProofs(), second = WorkerProofs()
        let firstToken = try DPoPExchangeTests.dpopToken("tok", plan: plan, proofs: first)
        let secondToken = try DPoPExchangeTests.dpopToken("tok", plan: plan, proofs: second)
        withBytes("n-1") { first.remember($0, for: plan, provedAt: 0) }
        let (firstProof, firstVersion) = try versionedProof("/a", plan: plan, token: firstToken, proofs: first)
        let (secondProof, secondVersion) = try versionedProof("/b", plan: plan, token: secondToken, proofs: second)
        XCTAssertEqual(try JWTClaims(payload: firstProof.payload).nonce, "n-1")
        XCTAssertEqual(try JWTClaims(payload: secondProof.payload).nonce, "n-1")
        XCTAssertEqual(firstVersion, 1)
        XCTAssertEqual(secondVersion, firstVersion)
        withBytes("n-2") { first.remember($0, for: plan, provedAt: firstVersion) }
        withBytes("n-1") { second.remember($0, for: plan, provedAt: secondVersion) }
        XCTAssertEqual(try JWTClaims(payload: proof("/c", plan: plan, token: secondToken, proofs: second).payload).nonce, "n-2")
        XCTAssertEqual(try JWTClaims(payload: proof("/d", plan: plan, token: firstToken, proofs: first).payload).nonce, "n-2")
        // A `use_dpop_nonce` answer to a proof with the nonce in force moves it.
        let (current, currentVersion) = try versionedProof("/e", plan: plan, token: secondToken, proofs: second)
        XCTAssertEqual(try JWTClaims(payload: current.payload).nonce, "n-2")
        withBytes("n-3") { second.remember($0, for: plan, provedAt: currentVersion) }
        XCTAssertEqual(try JWTClaims(payload: proof("/f", plan: plan, token: firstToken, proofs: first).payload).nonce, "n-3")
    }

    /// A request's proof carried n-1; another worker then heard n-2, and the upstream (rotated
    /// again, or another backend of it) answers this request with `use_dpop_nonce` and n-3. The
    /// replay signs with n-3, which the upstream asked for; the shared nonce stays n-2 (the
    /// challenge came to a proof made before it moved), until an answer to a later proof brings n-3.
    func testTheReplayAfterANonceChallengeSignsWithTheChallengesNonce() throws {
        let plan = DPoPExchangeTests.dpopPlan()
        let first = WorkerProofs(), second = WorkerProofs()
        let firstToken = try DPoPExchangeTests.dpopToken("tok", plan: plan, proofs: first)
        let secondToken = try DPoPExchangeTests.dpopToken("tok", plan: plan, proofs: second)
        withBytes("n-1") { first.remember($0, for: plan, provedAt: 0) }
        let (challenged, challengedVersion) = try versionedProof("/a", plan: plan, token: secondToken, proofs: second)
        XCTAssertEqual(try JWTClaims(payload: challenged.payload).nonce, "n-1")
        withBytes("n-2") { first.remember($0, for: plan, provedAt: challengedVersion) }
        withBytes("n-3") { second.remember($0, for: plan, provedAt: challengedVersion) }
        let (replay, replayVersion) = try versionedProof("/a", plan: plan, token: secondToken, proofs: second,
                                                         challengedNonce: Array("n-3".utf8))
        XCTAssertEqual(try JWTClaims(payload: replay.payload).nonce, "n-3", "the replay carries the nonce the challenge asked for")
        XCTAssertEqual(replayVersion, challengedVersion + 1, "the version of the nonce in force as the replay went")
        XCTAssertEqual(try JWTClaims(payload: proof("/b", plan: plan, token: firstToken, proofs: first).payload).nonce, "n-2")
        XCTAssertEqual(try JWTClaims(payload: proof("/c", plan: plan, token: secondToken, proofs: second).payload).nonce, "n-2",
                       "the challenge's nonce is for its replay only")
        withBytes("n-3") { second.remember($0, for: plan, provedAt: replayVersion) }
        XCTAssertEqual(try JWTClaims(payload: proof("/d", plan: plan, token: firstToken, proofs: first).payload).nonce, "n-3",
                       "the replay's answer is newer than n-2, and moves it")
    }

    func testEachProofHasItsOwnJTI() throws {
        let plan = DPoPExchangeTests.dpopPlan()
        let proofs = WorkerProofs()
        let token = try DPoPExchangeTests.dpopToken("tok", plan: plan, proofs: proofs)
        let ids = try (0..<100).map { _ in try JWTClaims(payload: proof("/a", plan: plan, token: token, proofs: proofs).payload).jwtID }
        XCTAssertEqual(Set(ids).count, 100)
    }

    func testADPoPTokenGoesAsAuthorizationDPoPWithItsProof() throws {
        let plan = DPoPExchangeTests.dpopPlan()
        let request = parsedHead(head("GET /a HTTP/1.1", "Host: relay.example", "Authorization: Bearer client", "DPoP: client-proof",
                                      "X-Kept: 1"))
        let text = withBytes("/a") { target in
            withBytes("tok") { token in
                withBytes("the.proof.jws") { proof in
                    written {
                        ForwardedHead.writeRequest(request, target: target, plan: plan, framing: .none, forwarding: &forwarding,
                                                   clientHost: request.host, token: token, proof: proof, into: &$0)
                    }
                }
            }
        }
        XCTAssertEqual(text, head("GET /a HTTP/1.1", "Host: orders.internal:8080", "X-Kept: 1", "X-Forwarded-For: 192.0.2.7",
                                  "X-Forwarded-Proto: http", "X-Forwarded-Host: relay.example", "Via: 1.1 oauth-relay",
                                  "Authorization: DPoP tok", "DPoP: the.proof.jws"))
    }

    func testABearerTokenOfADPoPIdentityGoesAsBearerWithoutAProof() {
        let plan = DPoPExchangeTests.dpopPlan()
        let request = parsedHead(head("GET /a HTTP/1.1", "Host: relay.example", "DPoP: client-proof"))
        let text = withBytes("/a") { target in
            withBytes("tok") { token in
                written {
                    ForwardedHead.writeRequest(request, target: target, plan: plan, framing: .none, forwarding: &forwarding,
                                               clientHost: request.host, token: token, into: &$0)
                }
            }
        }
        XCTAssertEqual(text, head("GET /a HTTP/1.1", "Host: orders.internal:8080", "X-Forwarded-For: 192.0.2.7",
                                  "X-Forwarded-Proto: http", "X-Forwarded-Host: relay.example", "Via: 1.1 oauth-relay",
                                  "Authorization: Bearer tok"), "the client's DPoP never goes upstream on this route")
    }

    /// Slots are never reused, so a worker's writers must not be a table as long as the highest
    /// slot ever seen: reloads would grow it for ever.
    func testAWorkerKeepsWritersOnlyForTheIdentitiesInForce() throws {
        var identity = Identity(name: "svc", tokenUrl: HTTPURL(scheme: .http, host: "127.0.0.1", port: 9, path: "/token"))
        identity.dpop = .generatedKey(.es256)
        let proofs = WorkerProofs()
        let access = AccessToken(value: "tok", type: "DPoP", issuedAt: 0, expiresAt: 100, refreshAt: 50)
        let reloaded = (0..<3).map { IdentityTokens(identity: identity, slot: 100_000 * ($0 + 1)) }
        for tokens in reloaded { _ = try proofs.proofing(for: access, of: tokens).get() }
        XCTAssertEqual(proofs.writerCount, 3)
        proofs.keepOnly(slots: [reloaded[2].slot])
        XCTAssertEqual(proofs.writerCount, 1, "a reload keeps the writer of the identity in force only")
        XCTAssertNoThrow(try proofs.proofing(for: access, of: reloaded[2]).get())
        XCTAssertEqual(proofs.writerCount, 1)
    }

    func testAnIdentityWithoutAKeyCannotProofADPoPToken() {
        let plan = ExchangeDriver.plan(identity: "svc")
        let identity = Identity(name: "svc", tokenUrl: HTTPURL(scheme: .http, host: "127.0.0.1", port: 9, path: "/token"))
        let tokens = IdentityTokens(identity: identity, slot: 3)
        let access = AccessToken(value: "tok", type: "DPoP", issuedAt: 0, expiresAt: 100, refreshAt: 50)
        guard case .failure(let problem) = WorkerProofs().proofing(for: access, of: tokens) else { return XCTFail("refused") }
        XCTAssertEqual(problem.status, 502)
        XCTAssertTrue(problem.detail.contains("no dpop key"), problem.detail)
        XCTAssertNil(plan.dpopTokenHeaderPrefix)
    }
}
