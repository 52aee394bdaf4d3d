import Endpoints
import OAuth2
import SafeText
import XCTest

/// Whether an introspected token is good for a route: `invalid_token` (inactive, times, issuer,
/// audience, DPoP binding) before `insufficient_scope`.
final class IntrospectionVerdictTests: XCTestCase {
    private let now: Int64 = 1_800_000_000
    private let jkt = "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"
    private let rules = IntrospectionRules(issuer: "https://idp.example.com", audiences: ["orders-api", "orders-relay"],
                                           requiredScopes: ["orders.read"], clockSkewSeconds: 60)

    private func answer(_ members: String) throws -> IntrospectionResponse {
        let request = TokenRequest.introspection(for: makeIdentity(auth: .basic), token: Secret("caller-token"),
                                                 at: HTTPURL(scheme: .https, host: "idp.example.com", path: "/introspect"),
                                                 tokenEndpoint: nil)
        return try request.parseIntrospection(reply(200, "{" + members + "}"), unixTime: 0)
    }

    /// The verdict on an answer of `members` for `rules` (the route's unless given) at `now`.
    private func verdict(_ members: String, rules: IntrospectionRules? = nil, presentedAs presentation: TokenPresentation = .bearer) throws
        -> IntrospectionVerdict {
        try answer(members).verdict(rules ?? self.rules, presentedAs: presentation, now: now)
    }

    /// A token good for `rules`.
    private let good = #""active":true,"iss":"https://idp.example.com","aud":["orders-relay"],"scope":"orders.read orders.write","exp":1800000300"#

    private func isAccepted(_ verdict: IntrospectionVerdict) -> Bool {
        if case .accepted = verdict { true } else { false }
    }

    func testAGoodTokenIsAccepted() throws {
        guard case .accepted(let token) = try verdict(good) else { return XCTFail("refused") }
        XCTAssertEqual(token.scopes, ["orders.read", "orders.write"])
    }

    func testAnInactiveTokenIsInvalid() throws {
        XCTAssertEqual(try verdict(#""active":false"#), .invalidToken(.inactive))
    }

    /// `exp` passed: refused once the skew has passed too (as JWTClaims.validate does).
    func testAnExpiredTokenIsInvalid() throws {
        let base = #""active":true,"iss":"https://idp.example.com","aud":"orders-api","scope":"orders.read","#
        XCTAssertEqual(try verdict(base + #""exp":1799999940"#), .invalidToken(.expired))
        XCTAssertEqual(try verdict(base + #""exp":1000"#), .invalidToken(.expired))
        XCTAssertTrue(isAccepted(try verdict(base + #""exp":1799999941"#)))
        XCTAssertEqual(try verdict(base + #""exp":1800000000"#, rules: IntrospectionRules(clockSkewSeconds: 0)), .invalidToken(.expired))
        XCTAssertTrue(isAccepted(try verdict(base + #""exp":1800000001"#, rules: IntrospectionRules(clockSkewSeconds: 0))))
    }

    func testATokenNotValidYetIsInvalid() throws {
        XCTAssertEqual(try verdict(good + #","nbf":1800000061"#), .invalidToken(.notYetValid))
        XCTAssertTrue(isAccepted(try verdict(good + #","nbf":1800000060"#)))
    }

    func testATokenIssuedInTheFutureIsInvalid() throws {
        XCTAssertEqual(try verdict(good + #","iat":1800000061"#), .invalidToken(.issuedInTheFuture))
        XCTAssertTrue(isAccepted(try verdict(good + #","iat":1800000060"#)))
    }

    /// Another issuer is refused; an answer without `iss` (DOT's) speaks for the endpoint's issuer.
    func testTheIssuerMustMatchWhenNamed() throws {
        XCTAssertEqual(try verdict(#""active":true,"iss":"https://evil.example.com","aud":"orders-api","scope":"orders.read""#),
                       .invalidToken(.issuerMismatch(expected: "https://idp.example.com")))
        XCTAssertTrue(isAccepted(try verdict(#""active":true,"aud":"orders-api","scope":"orders.read""#)))
    }

    /// With audiences configured, `aud` must name one; without `aud` the token is for no one here.
    func testTheAudienceMustNameOneOfTheRoutes() throws {
        XCTAssertEqual(try verdict(#""active":true,"aud":["billing-api"],"scope":"orders.read""#), .invalidToken(.audienceMismatch))
        XCTAssertEqual(try verdict(#""active":true,"scope":"orders.read""#), .invalidToken(.audienceMismatch))
        XCTAssertTrue(isAccepted(try verdict(#""active":true,"aud":["billing-api","orders-api"],"scope":"orders.read""#)))
        XCTAssertTrue(isAccepted(try verdict(#""active":true,"scope":"orders.read""#, rules: IntrospectionRules(requiredScopes: ["orders.read"]))))
    }

    func testAMissingScopeIsInsufficient() throws {
        let strict = IntrospectionRules(requiredScopes: ["orders.write", "orders.read", "orders.admin"])
        XCTAssertEqual(try verdict(#""active":true,"scope":"orders.read""#, rules: strict),
                       .insufficientScope(missing: ["orders.write", "orders.admin"]))
        XCTAssertEqual(try verdict(#""active":true"#, rules: strict), .insufficientScope(missing: ["orders.write", "orders.read", "orders.admin"]))
        // Scopes compare whole: "orders.read" is not "orders".
        XCTAssertEqual(try verdict(#""active":true,"scope":"orders.readonly orders""#, rules: IntrospectionRules(requiredScopes: ["orders.read"])),
                       .insufficientScope(missing: ["orders.read"]))
    }

    /// `insufficient_scope` is only for an otherwise good token: an expired one lacking the
    /// scope is `invalid_token`.
    func testInvalidComesBeforeInsufficient() throws {
        XCTAssertEqual(try verdict(#""active":true,"aud":"orders-api","exp":1000"#), .invalidToken(.expired))
        XCTAssertEqual(try verdict(#""active":true,"aud":"elsewhere""#), .invalidToken(.audienceMismatch))
    }

    // MARK: DPoP binding (RFC 9449 §7.1, §7.2)

    func testABoundTokenNeedsAProofOfItsKey() throws {
        let bound = good + #","token_type":"DPoP","cnf":{"jkt":"\#(jkt)"}"#
        XCTAssertTrue(isAccepted(try verdict(bound, presentedAs: .dpop(proofKeyThumbprint: jkt))))
        XCTAssertEqual(try verdict(bound), .invalidToken(.binding(.boundTokenAsBearer)))
        XCTAssertEqual(try verdict(bound, presentedAs: .dpop(proofKeyThumbprint: "another-key-thumbprint")),
                       .invalidToken(.binding(.anotherKey)))
    }

    func testAProofWithAnUnboundTokenIsRefused() throws {
        XCTAssertEqual(try verdict(good, presentedAs: .dpop(proofKeyThumbprint: jkt)), .invalidToken(.binding(.unboundToken)))
        XCTAssertTrue(isAccepted(try verdict(good)))
    }

    /// A token bound to a certificate (RFC 8705) is refused however it came: the relay cannot
    /// check that binding, and it must not pass as a bearer token.
    func testABindingTheRelayCannotCheckIsRefused() throws {
        let bound = good + #","cnf":{"x5t#S256":"bwcK0esc3ACC3DB2Y5_lESsXE8o9ltc05O89jdN-dg2"}"#
        XCTAssertEqual(try verdict(bound), .invalidToken(.uncheckableBinding))
        XCTAssertEqual(try verdict(bound, presentedAs: .dpop(proofKeyThumbprint: jkt)), .invalidToken(.uncheckableBinding))
    }

    func testTheBindingRuleAlone() {
        XCTAssertNil(TokenPresentation.bearer.mismatch(withTokenBoundTo: nil))
        XCTAssertEqual(TokenPresentation.bearer.mismatch(withTokenBoundTo: jkt), .boundTokenAsBearer)
        XCTAssertNil(TokenPresentation.dpop(proofKeyThumbprint: jkt).mismatch(withTokenBoundTo: jkt))
        XCTAssertEqual(TokenPresentation.dpop(proofKeyThumbprint: jkt).mismatch(withTokenBoundTo: "other"), .anotherKey)
        XCTAssertEqual(TokenPresentation.dpop(proofKeyThumbprint: jkt).mismatch(withTokenBoundTo: nil), .unboundToken)
    }

    func testRefusalsNameTheRuleNotTheToken() throws {
        let texts = [IntrospectionRefusal.inactive, .expired, .notYetValid, .issuedInTheFuture, .issuerMismatch(expected: "https://idp.example.com"),
                     .audienceMismatch, .binding(.boundTokenAsBearer), .binding(.anotherKey), .binding(.unboundToken)].map(\.description)
        XCTAssertEqual(texts, [
            "the token is not active", "the token has expired (exp)", "the token is not valid yet (nbf)",
            "the token was issued in the future (iat)", "the token's issuer is not \"https://idp.example.com\"",
            "the token's audience names none of the route's audiences", "the token is DPoP-bound but came without a DPoP proof",
            "the DPoP proof's key is not the key the token is bound to", "the token came with a DPoP proof but is bound to no key",
        ])
    }
}
