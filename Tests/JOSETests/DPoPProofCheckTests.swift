import Crypto
import Endpoints
import JOSE
import JSON
import XCTest

/// RFC 9449 §4.3's checks of a proof that came with a DPoP-bound token: one refusal reason per
/// broken rule, RFC 9449's own examples accepted.
final class DPoPProofCheckTests: JOSETestCase {
    private let now: Int64 = 1_800_000_000
    private let token = "opaque-access-token-1"
    private let uri = HTTPURL(scheme: .https, host: "api.test", path: "/orders/42")

    private func request(method: String = "GET", token: String? = nil, jkt: String? = nil) -> DPoPProofRequest {
        DPoPProofRequest(method: method, uri: uri, accessToken: token ?? self.token, boundKeyThumbprint: jkt)
    }

    private func thumbprint(_ key: PrivateKey) throws -> String {
        try JWK(publicKey: key.publicKey).thumbprint
    }

    /// A proof of `key` for GET https://api.test/orders/42 at `now`, with `header` and `claims`
    /// changed as a test needs (or another `payload` altogether), signed with `signingKey` (`key`
    /// unless given) or an HMAC secret.
    private func proof(key: PrivateKey = TestKeys.ec, algorithm: String = "ES256",
                       header edit: (inout [JSONMember]) throws -> Void = { _ in },
                       claims editClaims: (inout JWTClaims) -> Void = { _ in },
                       payload: [UInt8]? = nil, signingKey: PrivateKey? = nil, hmacSecret: SymmetricKey? = nil) throws -> String {
        var header = [JSONMember("typ", .string("dpop+jwt")), JSONMember("alg", .string(algorithm)),
                      JSONMember("jwk", try JWK(publicKey: key.publicKey).jsonValue)]
        try edit(&header)
        var claims = JWTClaims()
        claims.jwtID = "e1j3V_bKic8-LAEB"
        claims["htm"] = .string("GET")
        claims["htu"] = .string("https://api.test/orders/42")
        claims.issuedAt = now
        claims["ath"] = .string(DPoPProofBuilder.accessTokenHash(token))
        editClaims(&claims)
        let input = Base64URL.encode(Array(JSONValue.object(header).serialized.utf8)) + "." + Base64URL.encode(payload ?? claims.payload)
        let signature: [UInt8]
        if let hmacSecret {
            signature = try HMACSHA256.authenticationCode(for: Array(input.utf8), key: hmacSecret)
        } else {
            let signer = signingKey ?? key
            let scheme: SignatureAlgorithm = switch signer.kind {
            case .rsa: algorithm == "PS256" ? .rsaPSSSHA256 : .rsaPKCS1v15SHA256
            case .ecP256: .ecdsaP256SHA256
            case .ed25519: .ed25519
            }
            signature = try signer.signature(for: Array(input.utf8), algorithm: scheme)
        }
        return input + "." + Base64URL.encode(signature)
    }

    private func verdict(_ proof: String, _ request: DPoPProofRequest? = nil, rules: DPoPProofRules = DPoPProofRules()) -> DPoPProofVerdict {
        DPoPProofCheck.verify(proof, for: request ?? self.request(), rules: rules, now: now)
    }

    private func assertRefused(_ proof: String, _ expected: DPoPProofRefusal, _ request: DPoPProofRequest? = nil,
                               rules: DPoPProofRules = DPoPProofRules(), file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(verdict(proof, request, rules: rules), .refused(expected), file: file, line: line)
    }

    private func assertAccepted(_ proof: String, _ request: DPoPProofRequest? = nil, file: StaticString = #filePath, line: UInt = #line) {
        guard case .accepted = verdict(proof, request) else {
            return XCTFail("refused: \(verdict(proof, request))", file: file, line: line)
        }
    }

    // MARK: Accepted

    /// RFC 9449 §7.1, Figure 13: the proof of a request to a resource server with a DPoP token,
    /// whose key has the thumbprint Figure 9 publishes.
    func testRFC9449ResourceRequestExampleIsAccepted() throws {
        let example = "eyJ0eXAiOiJkcG9wK2p3dCIsImFsZyI6IkVTMjU2IiwiandrIjp7Imt0eSI6IkVDIiwieCI6Imw4dEZyaHgtMzR0VjNoUklDUkRZOXpDa0RscEJoRjQyVVFVZldWQVdCRnMiLCJ5IjoiOVZFNGpmX09rX282NHpiVFRsY3VOSmFqSG10NnY5VERWclUwQ2R2R1JEQSIsImNydiI6IlAtMjU2In19.eyJqdGkiOiJlMWozVl9iS2ljOC1MQUVCIiwiaHRtIjoiR0VUIiwiaHR1IjoiaHR0cHM6Ly9yZXNvdXJjZS5leGFtcGxlLm9yZy9wcm90ZWN0ZWRyZXNvdXJjZSIsImlhdCI6MTU2MjI2MjYxOCwiYXRoIjoiZlVIeU8ycjJaM0RaNTNFc05yV0JiMHhXWG9hTnk1OUlpS0NBcWtzbVFFbyJ9.2oW9RP35yRqzhrtNP86L-Ey71EOptxRimPPToA1plemAgR6pxHF8y6-yqyVnmcw6Fy1dqd-jfxSYoMxhAJpLjA"
        let request = DPoPProofRequest(method: "GET", uri: HTTPURL(scheme: .https, host: "resource.example.org", path: "/protectedresource"),
                                       accessToken: "Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU",
                                       boundKeyThumbprint: "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I")
        XCTAssertEqual(DPoPProofCheck.verify(example, for: request, rules: DPoPProofRules(), now: 1_562_262_618),
                       .accepted(DPoPAcceptedProof(jti: "e1j3V_bKic8-LAEB", issuedAt: 1_562_262_618,
                                                   keyThumbprint: "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I",
                                                   acceptedUntil: 1_562_262_678)))
    }

    /// RFC 9449 §4.1, Figure 2: a token request's proof carries no `ath`, so it cannot come with
    /// a token to a resource.
    func testRFC9449TokenRequestExampleIsNoResourceProof() {
        let example = "eyJ0eXAiOiJkcG9wK2p3dCIsImFsZyI6IkVTMjU2IiwiandrIjp7Imt0eSI6IkVDIiwieCI6Imw4dEZyaHgtMzR0VjNoUklDUkRZOXpDa0RscEJoRjQyVVFVZldWQVdCRnMiLCJ5IjoiOVZFNGpmX09rX282NHpiVFRsY3VOSmFqSG10NnY5VERWclUwQ2R2R1JEQSIsImNydiI6IlAtMjU2In19.eyJqdGkiOiItQndDM0VTYzZhY2MybFRjIiwiaHRtIjoiUE9TVCIsImh0dSI6Imh0dHBzOi8vc2VydmVyLmV4YW1wbGUuY29tL3Rva2VuIiwiaWF0IjoxNTYyMjYyNjE2fQ.2-GxA6T8lP4vfrg8v-FdWP0A0zdrj8igiMLvqRMUvwnQg4PtFLbdLXiOSsX0x7NVY-FNyJK70nfbV37xRZT3Lg"
        let request = DPoPProofRequest(method: "POST", uri: HTTPURL(scheme: .https, host: "server.example.com", path: "/token"),
                                       accessToken: "any")
        XCTAssertEqual(DPoPProofCheck.verify(example, for: request, rules: DPoPProofRules(), now: 1_562_262_616),
                       .refused(.claimMissing("ath")))
    }

    /// The relay's own proofs (DPoPProofBuilder) pass, for every algorithm: writer and checker
    /// agree on every claim.
    func testTheRelaysOwnProofsAreAcceptedForEveryAlgorithm() throws {
        for algorithm in [JWSAlgorithm.es256, .rs256, .ps256, .edDSA] {
            let builder = try DPoPProofBuilder(signer: TestKeys.signer(algorithm))
            var random = CountingRandom()
            let made = try builder.proof(method: "GET", url: "https://api.test/orders/42?page=2", accessToken: token, now: now, random: &random)
            guard case .accepted(let accepted) = verdict(made, request(jkt: builder.keyThumbprint)) else {
                XCTFail("\(algorithm): \(verdict(made))")
                continue
            }
            XCTAssertEqual(accepted.keyThumbprint, builder.keyThumbprint, "\(algorithm)")
            XCTAssertEqual(accepted.issuedAt, now)
            XCTAssertEqual(accepted.acceptedUntil, now + DPoPProofRules.defaultWindowSeconds)
        }
    }

    /// §4.3 point 9: `htu` and the request's URI compare after RFC 3986 §6.2.2 and §6.2.3
    /// normalization.
    func testTargetsCompareAfterNormalization() throws {
        for htu in ["HTTPS://API.Test/orders/42", "https://api.test:443/orders/42", "https://api.test/orders/%34%32",
                    "https://api.test/orders/./42", "https://api.test/x/../orders/42"] {
            assertAccepted(try proof(claims: { $0["htu"] = .string(htu) }))
        }
        let root = DPoPProofRequest(method: "GET", uri: HTTPURL(scheme: .https, host: "api.test", path: "/"), accessToken: token)
        assertAccepted(try proof(claims: { $0["htu"] = .string("https://api.test") }), root)
    }

    func testTheWindowsEdgesAreInside() throws {
        assertAccepted(try proof(claims: { $0.issuedAt = self.now - 60 }))
        assertAccepted(try proof(claims: { $0.issuedAt = self.now + 60 }))
    }

    func testAJTIOfTheLongestLengthIsAccepted() throws {
        assertAccepted(try proof(claims: { $0.jwtID = String(repeating: "j", count: DPoPProofCheck.maximumJTILength) }))
    }

    func testTheFullMediaTypeIsADPoPType() throws {
        assertAccepted(try proof(header: { $0[0].value = .string("application/dpop+jwt") }))
    }

    func testATokenWhoseBindingIsNotKnownYetIsCheckedLater() throws {
        guard case .accepted(let accepted) = verdict(try proof(), request(jkt: nil)) else { return XCTFail("refused") }
        XCTAssertEqual(accepted.keyThumbprint, try thumbprint(TestKeys.ec))
    }

    // MARK: Refused: the request

    func testAnotherMethodIsRefused() throws {
        assertRefused(try proof(claims: { $0["htm"] = .string("POST") }), .methodMismatch)
        assertRefused(try proof(claims: { $0["htm"] = .string("get") }), .methodMismatch)
    }

    func testATargetWithAQueryOrFragmentIsRefused() throws {
        assertRefused(try proof(claims: { $0["htu"] = .string("https://api.test/orders/42?page=2") }), .targetHasQuery)
        assertRefused(try proof(claims: { $0["htu"] = .string("https://api.test/orders/42?") }), .targetHasQuery)
        assertRefused(try proof(claims: { $0["htu"] = .string("https://api.test/orders/42#top") }), .targetHasQuery)
    }

    func testAnotherTargetIsRefused() throws {
        for htu in ["https://other.test/orders/42", "http://api.test/orders/42", "https://api.test:8443/orders/42",
                    "https://api.test/orders/43", "https://api.test/orders/42/", "https://api.test/orders/%2F42"] {
            assertRefused(try proof(claims: { $0["htu"] = .string(htu) }), .targetMismatch)
        }
    }

    func testATargetThatIsNoHTTPURLIsRefused() throws {
        for htu in ["/orders/42", "ftp://api.test/orders/42", "https://user@api.test/orders/42", "https://api.test/or ders"] {
            assertRefused(try proof(claims: { $0["htu"] = .string(htu) }), .claimNotValid("htu"))
        }
    }

    func testAProofIssuedTooLongAgoIsRefused() throws {
        assertRefused(try proof(claims: { $0.issuedAt = self.now - 61 }), .issuedTooLongAgo)
        assertRefused(try proof(claims: { $0.issuedAt = .min }), .issuedTooLongAgo)
    }

    func testAProofIssuedInTheFutureIsRefused() throws {
        assertRefused(try proof(claims: { $0.issuedAt = self.now + 61 }), .issuedInTheFuture)
        assertRefused(try proof(claims: { $0.issuedAt = .max }), .issuedInTheFuture)
    }

    func testARouteWindowIsItsOwn() throws {
        let narrow = DPoPProofRules(windowSeconds: 5)
        assertRefused(try proof(claims: { $0.issuedAt = self.now - 6 }), .issuedTooLongAgo, rules: narrow)
        XCTAssertEqual(verdict(try proof(claims: { $0.issuedAt = self.now - 5 }), rules: narrow),
                       .accepted(DPoPAcceptedProof(jti: "e1j3V_bKic8-LAEB", issuedAt: now - 5, keyThumbprint: try thumbprint(TestKeys.ec),
                                                   acceptedUntil: now)))
    }

    func testAHashOfAnotherTokenIsRefused() throws {
        assertRefused(try proof(claims: { $0["ath"] = .string(DPoPProofBuilder.accessTokenHash("another-token")) }), .accessTokenHashMismatch)
        assertRefused(try proof(), .accessTokenHashMismatch, request(token: "another-token"))
    }

    func testAKeyOtherThanTheBoundOneIsRefused() throws {
        assertRefused(try proof(), .keyNotBound, request(jkt: try thumbprint(TestKeys.otherEC)))
        assertAccepted(try proof(), request(jkt: try thumbprint(TestKeys.ec)))
    }

    // MARK: Refused: the claims

    func testEachMissingClaimIsNamed() throws {
        for name in ["jti", "htm", "htu", "iat", "ath"] {
            assertRefused(try proof(claims: { $0[name] = nil }), .claimMissing(name))
        }
    }

    func testEachClaimOfTheWrongTypeIsNamed() throws {
        for name in ["jti", "htm", "htu", "ath"] {
            assertRefused(try proof(claims: { $0[name] = .integer(1) }), .claimNotValid(name))
            assertRefused(try proof(claims: { $0[name] = .string("") }), .claimNotValid(name))
        }
        assertRefused(try proof(claims: { $0["iat"] = .string("1800000000") }), .claimNotValid("iat"))
    }

    func testAnOverlongJTIIsRefused() throws {
        assertRefused(try proof(claims: { $0.jwtID = String(repeating: "j", count: DPoPProofCheck.maximumJTILength + 1) }), .jtiTooLong)
    }

    // MARK: Refused: the header and the signature

    func testAProofWithoutTheDPoPTypeIsRefused() throws {
        assertRefused(try proof(header: { $0.removeFirst() }), .notDPoPType)
        assertRefused(try proof(header: { $0[0].value = .string("JWT") }), .notDPoPType)
        assertRefused(try proof(header: { $0[0].value = .string("at+jwt") }), .notDPoPType)
    }

    func testAlgNoneIsRefused() throws {
        let unsigned = try proof(header: { $0[1].value = .string("none") }).split(separator: ".")[0...1].joined(separator: ".") + "."
        assertRefused(unsigned, .algorithmNotAllowed)
    }

    /// HS256 "signed" with a secret and a public key in `jwk`: a shared secret proves nothing.
    func testHS256IsRefusedWhateverTheRulesSay() throws {
        let forged = try proof(algorithm: "HS256", hmacSecret: TestKeys.secret)
        assertRefused(forged, .algorithmNotAllowed)
        let askingForHS256 = DPoPProofRules(algorithms: [.hs256, .es256])
        XCTAssertEqual(askingForHS256.algorithms, [.es256])
        assertRefused(forged, .algorithmNotAllowed, rules: askingForHS256)
    }

    func testAnAlgorithmOutsideTheRulesIsRefused() throws {
        assertRefused(try proof(), .algorithmNotAllowed, rules: DPoPProofRules(algorithms: [.rs256]))
        assertRefused(try proof(algorithm: "HS512"), .algorithmNotAllowed)
    }

    func testAnAlgorithmThatDoesNotFitTheKeyIsRefused() throws {
        assertRefused(try proof(key: TestKeys.rsa, algorithm: "ES256"), .algorithmNotAllowed)
    }

    func testAPrivateKeyInTheJWKIsRefused() throws {
        let ecJWK = try JWK(publicKey: TestKeys.ec.publicKey).jsonValue
        assertRefused(try proof(header: { $0[2].value = .object(ecJWK.members! + [JSONMember("d", .string("AAAA"))]) }), .keyNotPublic)
        let octet = JSONValue.object([JSONMember("kty", .string("oct")), JSONMember("k", .string("AAAA"))])
        assertRefused(try proof(header: { $0[2].value = octet }), .keyNotPublic)
    }

    func testAProofWithoutAKeyIsRefused() throws {
        assertRefused(try proof(header: { $0.remove(at: 2) }), .keyMissing)
    }

    func testAKeyTheRelayCannotUseIsRefused() throws {
        let p384 = JSONValue.object([JSONMember("kty", .string("EC")), JSONMember("crv", .string("P-384")),
                                     JSONMember("x", .string("AAAA")), JSONMember("y", .string("AAAA"))])
        assertRefused(try proof(header: { $0[2].value = p384 }), .keyUnusable)
        let forEncryption = try JWK(publicKey: TestKeys.ec.publicKey, use: "enc").jsonValue
        assertRefused(try proof(header: { $0[2].value = forEncryption }), .keyUnusable)
    }

    func testASignatureByAnotherKeyIsRefused() throws {
        assertRefused(try proof(signingKey: TestKeys.otherEC), .signatureInvalid)
        assertRefused(try proof(key: TestKeys.rsa, algorithm: "RS256", signingKey: TestKeys.otherRSA), .signatureInvalid)
    }

    func testAChangedClaimBreaksTheSignature() throws {
        let parts = try proof().split(separator: ".").map(String.init)
        var claims = try JWTClaims(payload: XCTUnwrap(Base64URL.decode(parts[1])))
        claims["htm"] = .string("POST")
        assertRefused(parts[0] + "." + Base64URL.encode(claims.payload) + "." + parts[2], .signatureInvalid, request(method: "POST"))
    }

    func testWhatIsNoJWSIsMalformed() throws {
        assertRefused("", .malformed)
        assertRefused("not-a-proof", .malformed)
        assertRefused("a.b.c", .malformed)
        assertRefused(try proof(payload: Array("[1]".utf8)), .malformed)
        assertRefused(try proof(payload: Array("{\"jti\":".utf8)), .malformed)
        assertRefused(try proof(header: { $0.append(JSONMember("crit", .array([.string("exp")]))) }), .malformed)
    }

    func testAnOverlongProofIsRefusedUnread() throws {
        let padded = try proof(header: { $0.append(JSONMember("pad", .string(String(repeating: "p", count: DPoPProofCheck.maximumProofLength)))) })
        assertRefused(padded, .tooLong)
    }

    // MARK: What a refusal says

    /// RFC 9449's `invalid_dpop_proof` description names the rule, never the proof, the token,
    /// or a claim's value.
    func testRefusalsNeverQuoteTheProofOrTheToken() throws {
        let secretJTI = "jti-secret-value"
        let proofs = [
            try proof(claims: { $0.jwtID = secretJTI; $0["htm"] = .string("DELETE") }),
            try proof(claims: { $0.jwtID = secretJTI; $0["htu"] = .string("https://evil.test/x") }),
            try proof(claims: { $0.jwtID = secretJTI; $0["ath"] = .string("athvalue") }),
            try proof(claims: { $0.jwtID = secretJTI; $0["htu"] = .string("not a url") }),
            try proof(algorithm: "XYZ-ALG"),
        ]
        for made in proofs {
            guard case .refused(let refusal) = verdict(made) else { XCTFail("accepted"); continue }
            let text = refusal.description
            for forbidden in [secretJTI, token, "evil.test", "athvalue", "not a url", "XYZ-ALG", made] {
                XCTAssertFalse(text.contains(forbidden), "\(text) quotes \(forbidden.prefix(20))")
            }
        }
    }

    func testTheRequestIsDescribedWithoutItsToken() {
        let described = DPoPProofRequest(method: "GET", uri: HTTPURL(scheme: .https, host: "api.test", path: "/x", query: "access_token=q"),
                                         accessToken: token)
        for text in [described.description, String(reflecting: described), "\(Mirror(reflecting: described).children.map(\.value))"] {
            XCTAssertFalse(text.contains(token), text)
            XCTAssertFalse(text.contains("access_token=q"), text)
        }
        XCTAssertEqual(described.description, "GET https://api.test/x")
    }
}
