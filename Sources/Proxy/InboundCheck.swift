// InboundCheck: the verdict on a caller's bearer token for a route with `inbound`, with no I/O:
// the token, the issuer's keys at hand and the time in, an enum out. The signature is checked
// first (JOSE: the key its `kid` names, only the route's algorithms, never HS256 with a public key
// nor `none`), and only a verified token's claims are read: `iss` exactly the issuer, `aud`
// holding one of the audiences, `exp` present and not past, `nbf` and `iat` not in the future
// (each within `clockSkewSeconds`), then the required scopes.

import Config
import JOSE
import JSON

enum InboundVerdict: Equatable {
    case valid(VerifiedCaller)
    case invalid(InvalidToken)
    /// Verified and addressed to the route, but without `missing` scopes; until `expiresAt`.
    case insufficientScope(missing: [String], expiresAt: Int64, boundKeyThumbprint: String? = nil)
    /// The keys at hand cannot tell (none yet, or none with the token's `kid`): fetch them, maybe.
    case needsKeys(keyID: String?)
}

/// A token whose signature and claims passed.
struct VerifiedCaller: Equatable {
    let claims: JWTClaims
    /// `exp` (the check requires it).
    let expiresAt: Int64
}

struct InboundCheck {
    let rules: InboundRules
    let algorithms: Set<JWSAlgorithm>

    init(rules: InboundRules) {
        self.rules = rules
        algorithms = Set(rules.algorithms)
    }

    /// `token` checked against `keys` (nil: none read yet) at `now` (seconds since 1970).
    func verdict(_ token: String, keys: JWKSet?, now: Int64) -> InboundVerdict {
        let jws: JWS
        do throws(JOSEError) {
            jws = try JWS(compact: token)
        } catch {
            return .invalid(Self.reason(error))
        }
        guard algorithms.contains(jws.header.algorithm) else { return .invalid(.algorithmNotAllowed) }
        guard let keys else { return .needsKeys(keyID: jws.header.keyID) }
        do throws(JOSEError) {
            try keys.verify(jws, allowing: algorithms)
        } catch .keyNotFound {
            return .needsKeys(keyID: jws.header.keyID)
        } catch {
            return .invalid(Self.reason(error))
        }
        let claims: JWTClaims
        do throws(JOSEError) {
            claims = try JWTClaims(payload: jws.payload)
            try claims.validate(JWTValidationRules(issuer: rules.issuer, requiresExpiry: true), now: now,
                                leeway: Int64(rules.clockSkewSeconds))
        } catch .malformed {
            return .invalid(.malformedClaims)
        } catch {
            return .invalid(Self.reason(error))
        }
        guard claims.audience.contains(where: rules.audiences.contains) else { return .invalid(.wrongAudience) }
        guard let expiresAt = claims.expiry else { return .invalid(.missingExpiry) }
        // A binding the relay cannot check (`x5t#S256`, a `jkt` that is not a string) must not
        // pass as a bearer token: whoever holds the token could use it without the key.
        guard !Self.hasUncheckableBinding(claims) else { return .invalid(.uncheckableBinding) }
        let missing = Self.missingScopes(rules.requiredScopes, of: claims)
        guard missing.isEmpty else {
            return .insufficientScope(missing: missing, expiresAt: expiresAt, boundKeyThumbprint: Self.boundKeyThumbprint(of: claims))
        }
        return .valid(VerifiedCaller(claims: claims, expiresAt: expiresAt))
    }

    /// The token's `cnf.jkt` (RFC 9449 §6.1): the thumbprint of the DPoP key it is bound to.
    static func boundKeyThumbprint(of claims: JWTClaims) -> String? {
        guard case .object(let confirmation)? = claims["cnf"] else { return nil }
        return confirmation.last { $0.name == "jkt" }?.value.string
    }

    /// Whether the token has a `cnf` (not `null`) without a string `jkt`: bound to something
    /// (RFC 7800: a certificate, another key) the relay cannot check.
    static func hasUncheckableBinding(_ claims: JWTClaims) -> Bool {
        switch claims["cnf"] {
        case nil, .null?: false
        default: boundKeyThumbprint(of: claims) == nil
        }
    }

    /// Whether `bytes` has the shape of a compact JWS: three base64url segments (the first two not
    /// empty). A token of another shape is opaque: for introspection, where the route has it.
    @inline(__always)
    static func isCompactJWS(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var dots = 0, segmentLength = 0
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "."):
                guard dots < 2, segmentLength > 0 else { return false }
                dots += 1
                segmentLength = 0
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "_"):
                segmentLength += 1
            default:
                return false
            }
        }
        return dots == 2
    }

    /// The scopes of `required` the token does not carry: in `scope` (space-separated, RFC 8693
    /// §4.2 and RFC 9068) or `scp` (an array, or a space-separated string, as some IdPs write it).
    static func missingScopes(_ required: [String], of claims: JWTClaims) -> [String] {
        guard !required.isEmpty else { return [] }
        var granted = Set<Substring>()
        for name in ["scope", "scp"] {
            switch claims[name] {
            case .string(let text)?: granted.formUnion(text.split(separator: " "))
            case .array(let values)?: granted.formUnion(values.compactMap { $0.string.map { Substring($0) } })
            default: break
            }
        }
        return required.filter { !granted.contains(Substring($0)) }
    }

    private static func reason(_ error: JOSEError) -> InvalidToken {
        switch error {
        case .malformed, .unsupportedCriticalHeader: .notAJWT
        case .unsupportedAlgorithm, .algorithmNotAllowed: .algorithmNotAllowed
        case .keyNotFound: .unknownKey
        case .invalidKey, .invalidSignature, .crypto: .badSignature
        case .claimRejected(let problem):
            switch problem {
            case .expired: .expired
            case .notYetValid: .notYetValid
            case .issuedInTheFuture: .issuedInTheFuture
            case .issuerMismatch: .wrongIssuer
            case .audienceMismatch: .wrongAudience
            case .missing("exp"): .missingExpiry
            case .missing, .nonceMismatch: .malformedClaims
            }
        }
    }
}
