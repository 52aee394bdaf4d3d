import Config
import Crypto
import Foundation
import HTTPFields
@testable import Proxy
import Routing
import Tokens
import XCTest

/// What a route with `inbound` answers a caller it does not take (RFC 6750 §3), what the exchange
/// does with a caller's check (admitted, refused, parked for keys), and what goes upstream for an
/// admitted one: its claim headers, never a client's copy of them.
final class InboundAnswerTests: XCTestCase {
    private func header(_ problem: Problem, _ name: String) -> String? {
        problem.extraHeaders.first { $0.0 == name }?.1
    }

    func testTheChallengeOfEachRefusal() {
        let table: [(InboundRefusal, Int, String?)] = [
            (.noToken, 401, #"Bearer realm="oauth-relay""#),
            (.malformedRequest("the request has more than one Authorization field"), 400,
             #"Bearer realm="oauth-relay", error="invalid_request", error_description="the request has more than one Authorization field""#),
            (.invalidToken(.expired), 401, #"Bearer realm="oauth-relay", error="invalid_token", error_description="the token has expired""#),
            (.insufficientScope(missing: ["orders.write"], required: ["orders.read", "orders.write"]), 403,
             #"Bearer realm="oauth-relay", error="insufficient_scope", error_description="the token lacks the scope orders.write", scope="orders.read orders.write""#),
            (.keysUnavailable(reason: "the JWKS answered HTTP 500", retryAfterSeconds: 7), 503, nil),
        ]
        for (refusal, status, challenge) in table {
            let problem = Problem.inbound(refusal, route: "orders")
            XCTAssertEqual(problem.status, status, "\(refusal)")
            XCTAssertEqual(header(problem, "WWW-Authenticate"), challenge, "\(refusal)")
            XCTAssertEqual(problem.route, "orders")
        }
        XCTAssertEqual(header(Problem.inbound(.keysUnavailable(reason: "x", retryAfterSeconds: 7), route: nil), "Retry-After"), "7")
        XCTAssertEqual(Problem.inbound(.invalidToken(.badSignature), route: "orders").json(),
                       #"{"type":"urn:oauth-relay:problem:invalid-token","title":"Unauthorized","status":401,"#
                       + #""detail":"the token's signature does not verify","route":"orders"}"#)
    }

    func testTheDPoPChallenges() {
        let allowed = InboundChallenges(InboundDPoP())
        let required = InboundChallenges(InboundDPoP(mode: .required, algorithms: [.es256]))
        let refused = InboundChallenges(InboundDPoP(mode: .refused))
        func challenges(_ refusal: InboundRefusal, _ offered: InboundChallenges, dpop: Bool = false) -> [String] {
            Problem.inbound(refusal, route: "orders", challenges: offered, presentedAsDPoP: dpop).extraHeaders
                .filter { $0.0 == "WWW-Authenticate" }.map(\.1)
        }
        XCTAssertEqual(challenges(.noToken, allowed), [#"Bearer realm="oauth-relay""#, #"DPoP algs="ES256 RS256 PS256 EdDSA""#])
        XCTAssertEqual(challenges(.noToken, required), [#"DPoP algs="ES256""#])
        XCTAssertEqual(challenges(.noToken, refused), [#"Bearer realm="oauth-relay""#])
        // A route that takes no Bearer never offers it, not even to a malformed request.
        XCTAssertEqual(challenges(.malformedRequest("the request has more than one Authorization field"), required),
                       [#"DPoP error="invalid_request", error_description="the request has more than one Authorization field", algs="ES256""#])
        XCTAssertEqual(challenges(.invalidProof("the DPoP proof's htu does not match the request URI"), allowed),
                       [#"DPoP error="invalid_dpop_proof", error_description="the DPoP proof's htu does not match the request URI", algs="ES256 RS256 PS256 EdDSA""#])
        XCTAssertEqual(challenges(.replayedProof, required),
                       [#"DPoP error="invalid_dpop_proof", error_description="the DPoP proof was used before (jti)", algs="ES256""#])
        XCTAssertEqual(challenges(.invalidToken(.expired), required, dpop: true),
                       [#"DPoP error="invalid_token", error_description="the token has expired", algs="ES256""#])
        XCTAssertEqual(challenges(.invalidToken(.expired), allowed),
                       [#"Bearer realm="oauth-relay", error="invalid_token", error_description="the token has expired""#])
        XCTAssertEqual(challenges(.bindingMismatch(.boundTokenAsBearer), allowed),
                       [#"DPoP error="invalid_token", error_description="the token is DPoP-bound but came without a DPoP proof", algs="ES256 RS256 PS256 EdDSA""#])
        XCTAssertEqual(challenges(.bindingMismatch(.boundTokenAsBearer), refused),
                       [#"Bearer realm="oauth-relay", error="invalid_token", error_description="the token is DPoP-bound but came without a DPoP proof""#])
        let full = Problem.inbound(.proofMemoryFull(retryAfterSeconds: 60), route: "orders", challenges: allowed)
        XCTAssertEqual(full.status, 503)
        XCTAssertEqual(header(full, "Retry-After"), "60")
        let unavailable = Problem.inbound(.introspectionUnavailable(reason: "the introspection endpoint answered HTTP 500", retryAfterSeconds: 3),
                                          route: "orders")
        XCTAssertEqual(unavailable.status, 503)
        XCTAssertEqual(header(unavailable, "Retry-After"), "3")
    }

    // MARK: The exchange

    private static let upstream = UpstreamURL(parsing: "http://orders.internal:8080")!

    private static func plan(identity: String? = nil, inbound: InboundRules = InboundRules(issuer: "https://idp", audiences: ["a"])) -> RoutePlan {
        var route = Route(name: "orders", upstream: upstream, identity: identity)
        route.inbound = inbound
        return RoutePlan(route: route)
    }

    private static func caller(_ lines: String = "") -> CheckedCaller {
        CheckedCaller(token: CallerToken(value: "t", digest: SHA256.hash(Array("t".utf8)), expiresAt: 2_000), standing: .admitted,
                      claimLines: Array(lines.utf8), validUntil: 2_060)
    }

    private func start(_ exchange: inout Exchange, _ text: String) {
        let head = parsedHead(text)
        _ = exchange.readingStarts()
        exchange.headParsed(head, keepAlive: true, startedAt: 0)
    }

    func testARefusedCallerIsAnsweredOnItsRouteAndNothingIsForwarded() {
        var exchange = Exchange()
        start(&exchange, head("POST / HTTP/1.1", "Host: a", "Content-Length: 5"))
        let plan = Self.plan()
        let problem = answered(exchange.callerRefused(.inbound(.invalidToken(.expired), route: "orders"), on: plan))
        XCTAssertEqual(problem?.status, 401)
        XCTAssertFalse(exchange.forwardsRequestBody)
        XCTAssertTrue(exchange.current.plan === plan, "counted on its route")
        XCTAssertFalse(exchange.keepAlive, "the body that was not read ends the connection")
    }

    func testACallerWaitingForKeysIsParkedThenGoesOnToTheIdentitysToken() {
        var exchange = Exchange()
        start(&exchange, head("POST / HTTP/1.1", "Host: a", "Content-Length: 5"))
        guard case .waitForToken(pauseParser: true) = exchange.callerWaits(ParkedCaller(token: "t"), on: Self.plan(identity: "svc"), upgrade: nil) else {
            return XCTFail("parked, the body left unparsed")
        }
        XCTAssertTrue(exchange.isWaitingForToken, "the token wait's deadline runs")
        XCTAssertNil(exchange.callerToken)
        let caller = Self.caller()
        guard case .keepWaiting = exchange.callerAdmittedAfterWait(caller, token: .wait) else { return XCTFail("waits on, for the token") }
        XCTAssertTrue(exchange.isWaitingForToken)
        XCTAssertEqual(exchange.callerToken, caller.token, "what a lookup on the caller's behalf needs")
        guard case .forward(resumeParser: true) = exchange.tokenLookedUp(.inject(ExchangeDriver.token("svc-token"))) else {
            return XCTFail("forwarded with the identity's token")
        }
        XCTAssertEqual(exchange.token?.value, "svc-token")
    }

    func testACallerAdmittedAfterWaitingOnARouteWithoutIdentityIsForwarded() {
        var exchange = Exchange()
        start(&exchange, head("GET / HTTP/1.1", "Host: a"))
        _ = exchange.callerWaits(ParkedCaller(token: "t"), on: Self.plan(), upgrade: nil)
        guard case .forward(resumeParser: false) = exchange.callerAdmittedAfterWait(Self.caller(), token: nil) else {
            return XCTFail("forwarded")
        }
        XCTAssertFalse(exchange.isWaitingForToken)
    }

    func testAWaitForKeysEndsIn503AfterTokenWaitSeconds() {
        var exchange = Exchange()
        start(&exchange, head("POST / HTTP/1.1", "Host: a", "Content-Length: 5"))
        _ = exchange.callerWaits(ParkedCaller(token: "t"), on: Self.plan(identity: "svc"), upgrade: nil)
        guard case .answer(let problem, resumeParser: true)? = exchange.tokenWaitExpired(tokenWaitSeconds: 2) else {
            return XCTFail("answered, the parser resumed to read past the body")
        }
        XCTAssertEqual(problem.status, 503)
        XCTAssertEqual(problem.detail, "the caller's token cannot be checked now: the issuer's keys were not read within tokenWaitSeconds (2 s)")
        XCTAssertFalse(exchange.isWaitingForToken)
        XCTAssertNil(exchange.tokenWaitExpired(tokenWaitSeconds: 2), "once")
    }

    func testARefusalAfterTheWaitIsAnswered() {
        var exchange = Exchange()
        start(&exchange, head("GET / HTTP/1.1", "Host: a"))
        _ = exchange.callerWaits(ParkedCaller(token: "t"), on: Self.plan(), upgrade: nil)
        guard case .answer(let problem, resumeParser: false) = exchange.callerRefusedAfterWait(.inbound(.invalidToken(.unknownKey), route: "orders")) else {
            return XCTFail("answered")
        }
        XCTAssertEqual(problem.status, 401)
    }

    // MARK: What goes upstream

    private func forwarded(_ request: [String], plan: RoutePlan, claimLines: String?) -> String {
        let parsed = parsedHead(head(request))
        var forwarding = ForwardedHead.Forwarding(clientAddress: Array("192.0.2.7".utf8), trustForwardedHeaders: false, viaSuffix: viaSuffix)
        return withBytes("/") { target in
            written {
                ForwardedHead.writeRequest(parsed, target: target, plan: plan, framing: .none, forwarding: &forwarding, clientHost: nil,
                                           token: nil, claimLines: claimLines.map { Array($0.utf8) }, into: &$0)
            }
        }
    }

    func testClientCopiesOfClaimHeadersNeverReachTheUpstreamAndTheClaimsDo() {
        let plan = Self.plan(inbound: InboundRules(issuer: "https://idp", audiences: ["a"], claimHeaders: [
            ClaimHeader(claim: "sub", header: "X-Forwarded-User"), ClaimHeader(claim: "email", header: "X-Forwarded-Email"),
        ]))
        let request = ["GET / HTTP/1.1", "Host: a", "x-forwarded-user: root", "Authorization: Bearer t", "X-Forwarded-Email: forged"]
        XCTAssertEqual(forwarded(request, plan: plan, claimLines: "X-Forwarded-User: alice\r\n"),
                       head("GET / HTTP/1.1", "Host: orders.internal:8080", "Authorization: Bearer t", "X-Forwarded-For: 192.0.2.7",
                            "X-Forwarded-Proto: http", "Via: 1.1 oauth-relay", "X-Forwarded-User: alice"))
    }

    func testClaimHeadersSpelledWithUnderscoresNeverReachTheUpstreamInTheHeadNorInTrailers() {
        // A CGI-style upstream reads X_Forwarded_User as HTTP_X_FORWARDED_USER, the claim header's variable.
        let plan = Self.plan(inbound: InboundRules(issuer: "https://idp", audiences: ["a"], claimHeaders: [
            ClaimHeader(claim: "sub", header: "X-Forwarded-User"),
        ]))
        let request = ["GET / HTTP/1.1", "Host: a", "X_Forwarded_User: admin", "x-forwarded_USER: admin", "X_Forwarded_Userx: kept"]
        XCTAssertEqual(forwarded(request, plan: plan, claimLines: "X-Forwarded-User: alice\r\n"),
                       head("GET / HTTP/1.1", "Host: orders.internal:8080", "X_Forwarded_Userx: kept", "X-Forwarded-For: 192.0.2.7",
                            "X-Forwarded-Proto: http", "Via: 1.1 oauth-relay", "X-Forwarded-User: alice"))
        let chunked = parsedHead(head("POST / HTTP/1.1", "Host: a", "Transfer-Encoding: chunked")
                                 + "1\r\nx\r\n0\r\nX_Forwarded_User: admin\r\nX-Checksum: abc\r\n\r\n")
        XCTAssertEqual(written { ForwardedHead.writeLastChunk(trailersOf: chunked, plan: plan, into: &$0) }, "0\r\nX-Checksum: abc\r\n\r\n")
    }

    func testStripAuthorizationKeepsTheCallersTokenFromTheUpstream() {
        let plan = Self.plan(inbound: InboundRules(issuer: "https://idp", audiences: ["a"], stripAuthorization: true))
        XCTAssertEqual(forwarded(["GET / HTTP/1.1", "Host: a", "Authorization: Bearer t"], plan: plan, claimLines: nil),
                       head("GET / HTTP/1.1", "Host: orders.internal:8080", "X-Forwarded-For: 192.0.2.7", "X-Forwarded-Proto: http",
                            "Via: 1.1 oauth-relay"))
    }
}
