import Config
import Crypto
import Foundation
import JOSE
import JSON
@testable import Proxy
import XCTest

/// The verdict on a caller's token, with no I/O: genuine tokens of the issuer's keys pass, forged
/// ones of every kind are refused with a fixed reason, and a key the keys at hand lack asks for
/// keys rather than refusing.
final class InboundCheckTests: XCTestCase {
    static let issuerKey = try! PrivateKey.generate(.rsa(bits: 2048))
    static let otherKey = try! PrivateKey.generate(.rsa(bits: 2048))
    static let ecKey = try! PrivateKey.generate(.ecP256)
    static let now: Int64 = 1_800_000_000
    static let issuer = "https://idp.example.test/realms/prod"

    let rules = InboundRules(issuer: issuer, audiences: ["orders", "api://orders"], requiredScopes: ["orders.read"], clockSkewSeconds: 60)

    /// The issuer's JWKS: its RSA key as `k1`, its EC key as `k2`.
    static var keys: JWKSet {
        JWKSet(keys: [try! JWK(publicKey: issuerKey.publicKey, keyID: "k1"), try! JWK(publicKey: ecKey.publicKey, keyID: "k2")])
    }

    static func claims(_ changes: [String: JSONValue?] = [:]) -> JWTClaims {
        var claims = JWTClaims()
        claims.issuer = issuer
        claims.subject = "alice"
        claims.audience = ["orders"]
        claims.expiry = now + 300
        claims.issuedAt = now - 10
        claims["scope"] = .string("openid orders.read")
        for (name, value) in changes { claims[name] = value }
        return claims
    }

    static func token(_ claims: JWTClaims = claims(), key: PrivateKey = issuerKey, algorithm: JWSAlgorithm = .rs256,
                      keyID: String? = "k1") -> String {
        let signer = try! JWSSigner(privateKey: key, algorithm: algorithm)
        return try! JWS.sign(claims.payload, header: JWSHeader(algorithm: algorithm, type: "at+jwt", keyID: keyID), with: signer)
            .compactSerialization
    }

    /// A token signed with HMAC-SHA256 whose secret is `secret` (an attacker's guess at what a
    /// confused verifier would use: the public key's own bytes).
    static func hmacToken(secret: [UInt8], claims: JWTClaims = claims()) -> String {
        let signer = try! JWSSigner(hmacSecret: SymmetricKey(secret))
        return try! JWS.sign(claims.payload, header: JWSHeader(algorithm: .hs256, keyID: "k1"), with: signer).compactSerialization
    }

    static func base64url(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    private func verdict(_ token: String, keys: JWKSet? = keys, rules: InboundRules? = nil) -> InboundVerdict {
        InboundCheck(rules: rules ?? self.rules).verdict(token, keys: keys, now: Self.now)
    }

    private var keys: JWKSet { Self.keys }

    func testAGenuineTokenIsValidWithItsClaimsAndExpiry() throws {
        guard case .valid(let caller) = verdict(Self.token()) else { return XCTFail("\(verdict(Self.token()))") }
        XCTAssertEqual(caller.claims.subject, "alice")
        XCTAssertEqual(caller.expiresAt, Self.now + 300)
        guard case .valid = verdict(Self.token(key: Self.ecKey, algorithm: .es256, keyID: "k2")) else { return XCTFail("ES256") }
        guard case .valid = verdict(Self.token(algorithm: .ps256)) else { return XCTFail("PS256") }
        // Without a kid, every key that fits the algorithm is tried.
        guard case .valid = verdict(Self.token(keyID: nil)) else { return XCTFail("no kid") }
    }

    func testForgedAndWrongTokensAreInvalidForAFixedReason() throws {
        let pem = try Self.issuerKey.publicKey.pemRepresentation()
        let der = Array(Data(base64Encoded: pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined())!)
        let unsignedHeader = Self.base64url(Array(#"{"alg":"none","kid":"k1"}"#.utf8))
        let payload = Self.base64url(Self.claims().payload)
        let valid = Self.token()
        let parts = valid.split(separator: ".")
        let table: [(String, String, InvalidToken)] = [
            ("signed with another key under the issuer's kid", Self.token(key: Self.otherKey), .badSignature),
            ("alg none", "\(unsignedHeader).\(payload).", .algorithmNotAllowed),
            ("HS256 keyed with the public key's PEM", Self.hmacToken(secret: Array(pem.utf8)), .algorithmNotAllowed),
            ("HS256 keyed with the public key's DER", Self.hmacToken(secret: der), .algorithmNotAllowed),
            ("expired beyond the skew", Self.token(Self.claims(["exp": .integer(Self.now - 61)])), .expired),
            ("not valid before the future", Self.token(Self.claims(["nbf": .integer(Self.now + 61)])), .notYetValid),
            ("issued in the future", Self.token(Self.claims(["iat": .integer(Self.now + 3600)])), .issuedInTheFuture),
            ("another issuer", Self.token(Self.claims(["iss": .string("https://evil.example.test")])), .wrongIssuer),
            ("the issuer with a trailing slash", Self.token(Self.claims(["iss": .string(Self.issuer + "/")])), .wrongIssuer),
            ("another audience", Self.token(Self.claims(["aud": .string("billing")])), .wrongAudience),
            ("no audience", Self.token(Self.claims(["aud": nil])), .wrongAudience),
            ("no expiry", Self.token(Self.claims(["exp": nil])), .missingExpiry),
            ("an expiry that is no number", Self.token(Self.claims(["exp": .string("tomorrow")])), .malformedClaims),
            ("a payload altered after signing", "\(parts[0]).\(Self.base64url(Self.claims(["sub": .string("root")]).payload)).\(parts[2])",
             .badSignature),
            ("not a JWT", "opaque-token-value", .notAJWT),
            ("a JWE-like five segments", "a.b.c.d.e", .notAJWT),
            ("an ES256 token named as the RSA key", Self.token(key: Self.ecKey, algorithm: .es256, keyID: "k1"), .algorithmNotAllowed),
        ]
        for (label, token, expected) in table {
            XCTAssertEqual(verdict(token), .invalid(expected), label)
        }
    }

    func testAnAlgorithmOutsideTheRoutesListIsRefusedBeforeAnyKeyIsNeeded() {
        var esOnly = rules
        esOnly.algorithms = [.es256]
        XCTAssertEqual(verdict(Self.token(), keys: nil, rules: esOnly), .invalid(.algorithmNotAllowed))
        XCTAssertEqual(verdict(Self.hmacToken(secret: Array("a shared secret of at least 32 bytes".utf8)), keys: nil),
                       .invalid(.algorithmNotAllowed))
    }

    func testTheClockSkewIsTolerated() {
        guard case .valid = verdict(Self.token(Self.claims(["exp": .integer(Self.now - 59), "nbf": .integer(Self.now + 59)]))) else {
            return XCTFail("within the skew")
        }
        var strict = rules
        strict.clockSkewSeconds = 0
        XCTAssertEqual(verdict(Self.token(Self.claims(["exp": .integer(Self.now)])), rules: strict), .invalid(.expired))
    }

    func testAnUnknownKidOrNoKeysAskForKeys() {
        XCTAssertEqual(verdict(Self.token(key: Self.otherKey, keyID: "rotated")), .needsKeys(keyID: "rotated"))
        XCTAssertEqual(verdict(Self.token(), keys: nil), .needsKeys(keyID: "k1"))
        XCTAssertEqual(verdict(Self.token(), keys: JWKSet(keys: [])), .needsKeys(keyID: "k1"))
    }

    func testMissingScopesAreNamedFromScopeOrScp() {
        var both = rules
        both.requiredScopes = ["orders.read", "orders.write"]
        XCTAssertEqual(verdict(Self.token(), rules: both), .insufficientScope(missing: ["orders.write"], expiresAt: Self.now + 300))
        XCTAssertEqual(verdict(Self.token(Self.claims(["scope": nil])), rules: both),
                       .insufficientScope(missing: ["orders.read", "orders.write"], expiresAt: Self.now + 300))
        guard case .valid = verdict(Self.token(Self.claims(["scope": nil, "scp": .array([.string("orders.write"), .string("orders.read")])])),
                                    rules: both) else { return XCTFail("scp array") }
        guard case .valid = verdict(Self.token(Self.claims(["scope": .string("orders.read"), "scp": .string("orders.write")])),
                                    rules: both) else { return XCTFail("scope and scp string") }
        // A prefix of a scope is not the scope.
        XCTAssertEqual(verdict(Self.token(Self.claims(["scope": .string("orders.readonly")]))),
                       .insufficientScope(missing: ["orders.read"], expiresAt: Self.now + 300))
    }

    /// A token bound by something the relay cannot check (a certificate's `x5t#S256`, RFC 8705;
    /// a `jkt` that is no string) is no bearer token: refused, not passed as one.
    func testABindingTheRelayCannotCheckIsRefused() {
        for cnf: JSONValue in [.object([JSONMember("x5t#S256", .string("bwcK0esc3ACC3DB2Y5_lESsXE8o9ltc05O89jdN-dg2"))]),
                               .object([JSONMember("jkt", .integer(1))]), .object([]), .string("jkt"), .array([])] {
            XCTAssertEqual(verdict(Self.token(Self.claims(["cnf": cnf]))), .invalid(.uncheckableBinding), "\(cnf)")
        }
        guard case .valid = verdict(Self.token(Self.claims(["cnf": .null]))) else { return XCTFail("cnf null is no binding") }
        guard case .valid = verdict(Self.token(Self.claims(["cnf": .object([JSONMember("jkt", .string("thumbprint"))])]))) else {
            return XCTFail("cnf.jkt is a binding the gate judges")
        }
    }

    func testTheReasonsAreFitForErrorDescription() {
        for reason in [InvalidToken.notAJWT, .algorithmNotAllowed, .unknownKey, .badSignature, .expired, .notYetValid, .issuedInTheFuture,
                       .wrongIssuer, .wrongAudience, .missingExpiry, .malformedClaims, .uncheckableBinding] {
            XCTAssertTrue(reason.rawValue.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") },
                          reason.rawValue)
        }
    }
}
