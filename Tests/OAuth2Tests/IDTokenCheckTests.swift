import Crypto
import JOSE
import OAuth2
import SafeText
import XCTest

/// ID tokens from a login: signature, issuer, audience, authorized party, times and nonce.
final class IDTokenCheckTests: XCTestCase {
    private static let rsa = try! PrivateKey.generate(.rsa(bits: 2048))
    private static let ec = try! PrivateKey.generate(.ecP256)
    private static let otherEC = try! PrivateKey.generate(.ecP256)
    private let now: Int64 = 1_700_000_000
    private let nonce = Secret("n0nce-n0nce-n0nce-n0nce-n0nce")
    private let issuer = "https://idp.example.com"

    private var keys: JWKSet {
        JWKSet(keys: [try! JWK(publicKey: Self.rsa.publicKey, keyID: "rsa-1"), try! JWK(publicKey: Self.ec.publicKey, keyID: "ec-1")])
    }

    private var check: IDTokenCheck { IDTokenCheck(issuer: issuer, clientId: "cli-app", nonce: nonce) }

    /// An ID token with standard claims, changed by `edit`, signed by `key` as `kid`.
    private func idToken(key: PrivateKey = ec, algorithm: JWSAlgorithm = .es256, keyID: String? = "ec-1",
                         _ edit: (inout JWTClaims) -> Void = { _ in }) throws -> Secret {
        var claims = JWTClaims()
        claims.issuer = issuer
        claims.subject = "248289761001"
        claims.audience = ["cli-app"]
        claims.issuedAt = now - 5
        claims.expiry = now + 300
        claims.nonce = nonce.value
        claims["preferred_username"] = .string("alice")
        claims["email"] = .string("alice@example.com")
        claims["name"] = .string("Alice Example")
        edit(&claims)
        let signer = try JWSSigner(privateKey: key, algorithm: algorithm)
        return Secret(try JWS.sign(claims.payload, header: JWSHeader(algorithm: algorithm, type: "JWT", keyID: keyID), with: signer)
            .compactSerialization)
    }

    private func refusal(_ token: Secret, check: IDTokenCheck? = nil, keys: JWKSet? = nil,
                         file: StaticString = #filePath, line: UInt = #line) -> IDTokenError? {
        do {
            let subject = try (check ?? self.check).validate(token, keys: keys ?? self.keys, unixTime: now)
            XCTFail("expected a refusal, got \(subject)", file: file, line: line)
            return nil
        } catch {
            return error
        }
    }

    func testValidTokensOfEachAlgorithmGiveTheSubject() throws {
        for (key, algorithm, keyID) in [(Self.ec, JWSAlgorithm.es256, "ec-1"), (Self.rsa, .rs256, "rsa-1"), (Self.rsa, .ps256, "rsa-1")] {
            let subject = try check.validate(try idToken(key: key, algorithm: algorithm, keyID: keyID), keys: keys, unixTime: now)
            XCTAssertEqual(subject, LoginSubject(subject: "248289761001", preferredUsername: "alice", email: "alice@example.com",
                                                 name: "Alice Example"), "\(algorithm)")
        }
    }

    func testAStepUpsMaxAgeRefusesAnAuthenticationOlderThanItAndLeewayAllowsTheRest() throws {
        var fresh = check
        fresh.maxAge = 120
        let recent = try idToken { $0["auth_time"] = .integer(now - 170) }
        XCTAssertNoThrow(try fresh.validate(recent, keys: keys, unixTime: now), "within max_age and the 60 s leeway")
        let stale = try idToken { $0["auth_time"] = .integer(now - 181) }
        guard case .rejected(let reason)? = refusal(stale, check: fresh) else { return XCTFail("refused") }
        XCTAssertEqual(reason, "the person authenticated 181 s before, longer ago than the max_age of 120 s the upstream asked for")
        XCTAssertNoThrow(try check.validate(stale, keys: keys, unixTime: now), "no max_age asked, no auth_time check")
        XCTAssertNoThrow(try fresh.validate(try idToken(), keys: keys, unixTime: now), "an ID token without auth_time passes")
    }

    func testExtremeMaxAgeAndAuthTimeSaturateRatherThanTrap() throws {
        var huge = check
        huge.maxAge = Int.max
        let ancient = try idToken { $0["auth_time"] = .integer(.min) }
        XCTAssertNoThrow(try huge.validate(try idToken { $0["auth_time"] = .integer(now - 10) }, keys: keys, unixTime: now))
        XCTAssertNoThrow(try huge.validate(ancient, keys: keys, unixTime: now), "no age exceeds Int64.max")
        var fresh = check
        fresh.maxAge = 120
        guard case .rejected(let reason)? = refusal(ancient, check: fresh) else { return XCTFail("refused") }
        XCTAssertTrue(reason.contains("authenticated \(Int64.max) s before"), reason)
        XCTAssertNoThrow(try fresh.validate(try idToken { $0["auth_time"] = .integer(.max) }, keys: keys, unixTime: now),
                         "an auth_time in the future is no older than max_age")
    }

    func testDisplayNamePrefersUsernameThenEmailThenSubject() {
        XCTAssertEqual(LoginSubject(subject: "s", preferredUsername: "u", email: "e").displayName, "u")
        XCTAssertEqual(LoginSubject(subject: "s", email: "e").displayName, "e")
        XCTAssertEqual(LoginSubject(subject: "s", name: "n").displayName, "s")
    }

    func testWrongSignatureIsRefused() throws {
        // Signed by another key under the kid of the published one.
        XCTAssertEqual(refusal(try idToken(key: Self.otherEC)), .rejected("the JWS signature does not verify"))
    }

    func testUnknownKeyAsksForAJWKSRefetch() throws {
        XCTAssertEqual(refusal(try idToken(key: Self.otherEC, keyID: "ec-2")), .keyNotFound)
        let rotated = JWKSet(keys: [try JWK(publicKey: Self.otherEC.publicKey, keyID: "ec-2")])
        XCTAssertNoThrow(try check.validate(try idToken(key: Self.otherEC, keyID: "ec-2"), keys: rotated, unixTime: now))
    }

    func testWrongIssuerAudienceOrNonceIsRefused() throws {
        XCTAssertEqual(refusal(try idToken { $0.issuer = "https://evil.example" }),
                       .rejected("JWT rejected: the issuer is not \"https://idp.example.com\""))
        XCTAssertEqual(refusal(try idToken { $0.audience = ["another-app"] }),
                       .rejected("JWT rejected: the audience does not include \"cli-app\""))
        XCTAssertEqual(refusal(try idToken { $0.nonce = "replayed-nonce-from-another-login" }),
                       .rejected("JWT rejected: the nonce does not match the one sent"))
        XCTAssertEqual(refusal(try idToken { $0.nonce = nil }), .rejected("JWT rejected: the nonce claim is missing"))
    }

    func testNonceIsNotDemandedWhenNoneWasSent() throws {
        let withoutNonce = IDTokenCheck(issuer: issuer, clientId: "cli-app", nonce: nil)
        XCTAssertNoThrow(try withoutNonce.validate(try idToken { $0.nonce = nil }, keys: keys, unixTime: now))
    }

    func testExpiryAndIssueTimeWithLeeway() throws {
        XCTAssertEqual(refusal(try idToken { $0.expiry = self.now - 61 }), .rejected("JWT rejected: it has expired (exp)"))
        XCTAssertNoThrow(try check.validate(try idToken { $0.expiry = self.now - 59 }, keys: keys, unixTime: now))
        XCTAssertEqual(refusal(try idToken { $0.issuedAt = self.now + 120 }), .rejected("JWT rejected: it was issued in the future (iat)"))
        XCTAssertEqual(refusal(try idToken { $0.issuedAt = nil }), .rejected("the iat claim is missing"))
        XCTAssertEqual(refusal(try idToken { $0.expiry = nil }), .rejected("JWT rejected: the exp claim is missing"))
    }

    func testSubjectIsRequired() throws {
        XCTAssertEqual(refusal(try idToken { $0.subject = nil }), .rejected("the sub claim is missing"))
    }

    func testSeveralAudiencesNeedAnAuthorizedPartyThatIsTheClient() throws {
        XCTAssertEqual(refusal(try idToken { $0.audience = ["cli-app", "orders-api"] }),
                       .rejected("it has several audiences but no azp claim"))
        XCTAssertNoThrow(try check.validate(try idToken {
            $0.audience = ["cli-app", "orders-api"]
            $0["azp"] = .string("cli-app")
        }, keys: keys, unixTime: now))
        XCTAssertEqual(refusal(try idToken { $0["azp"] = .string("orders-api") }), .rejected("the azp claim is not the client id \"cli-app\""))
    }

    func testHS256AndAlgorithmsOutsideThePublishedOnesAreRefused() throws {
        let hmac = try JWS.sign(Array(#"{"iss":"https://idp.example.com"}"#.utf8), header: JWSHeader(algorithm: .hs256),
                                with: JWSSigner(hmacSecret: SymmetricKey(Array("0123456789abcdef0123456789abcdef".utf8))))
        XCTAssertNotNil(refusal(Secret(hmac.compactSerialization)))
        let onlyRS256 = IDTokenCheck(issuer: issuer, clientId: "cli-app", nonce: nonce, publishedAlgorithms: ["RS256", "none", "HS256"])
        XCTAssertEqual(onlyRS256.algorithms, [.rs256])
        XCTAssertNotNil(refusal(try idToken(), check: onlyRS256))
        XCTAssertEqual(IDTokenCheck(issuer: issuer, clientId: "c", nonce: nil, publishedAlgorithms: ["HS256"]).algorithms,
                       IDTokenCheck.supportedAlgorithms, "an IdP publishing nothing usable does not unlock other algorithms")
    }

    func testRefusalsShowNoTokenOrNonce() throws {
        let token = try idToken { $0.nonce = "n0nce-of-another-login-attempt" }
        let error = try XCTUnwrap(refusal(token))
        assertHidden([token.value, nonce.value, "n0nce-of-another-login-attempt"], in: error)
    }
}
