import Endpoints
import JSON

/// The check of a DPoP proof that came with a DPoP-bound access token (`Authorization: DPoP
/// <token>` and `DPoP: <proof>`, RFC 9449 §4.3 and §7.1), with no I/O and no clock of its own.
///
/// In the order of §4.3: the proof is one compact JWS (at most `maximumProofLength` bytes) whose
/// header has `typ: dpop+jwt`, an asymmetric `alg` from the allowed set (`none` and HS256 never,
/// whatever the set says) and a `jwk` holding a public key only; its signature verifies with that
/// key; its claims hold `jti` (at most `maximumJTILength` bytes), `htm` equal to the request's
/// method, `htu` equal to the request's URI (no query or fragment; both read and normalized as
/// `HTTPURL` reads every URL: scheme and host lowercased, the default port, the path as a request
/// path, RFC 3986 §6.2.2 and §6.2.3), `iat` within `windowSeconds` of now either way, and `ath`,
/// the SHA-256 of the access token; and the key's RFC 7638 thumbprint is the token's `cnf.jkt`
/// when that is known. Server nonces (§8) are not asked for, so a `nonce` claim is not read.
///
/// Whether the `jti` was seen before is the caller's to ask (`ProofReplayMemory`), with the
/// accepted proof's `jti`, key and window: a replay can only be recognised across requests.
///
/// A refusal names the rule the proof broke, never the proof, the token or a claim's value, so
/// its text may go into `WWW-Authenticate: DPoP error="invalid_dpop_proof"` and a log line.
public enum DPoPProofCheck {
    /// Longer proofs are refused unread. An RSA-4096 proof with every claim is under 2,000 bytes.
    public static let maximumProofLength = 8192
    /// Longer `jti`s are refused: RFC 9449 asks for 96 random bits or more (16 characters of
    /// base64url), and some clients send a UUID or two.
    public static let maximumJTILength = 256

    /// The verdict on `proof` for `request` at `now` (Unix seconds, the caller's clock).
    public static func verify(_ proof: some StringProtocol, for request: DPoPProofRequest, rules: DPoPProofRules,
                              now: Int64) -> DPoPProofVerdict {
        do throws(DPoPProofRefusal) {
            return .accepted(try acceptedProof(proof, for: request, rules: rules, now: now))
        } catch {
            return .refused(error)
        }
    }

    private static func acceptedProof(_ proof: some StringProtocol, for request: DPoPProofRequest, rules: DPoPProofRules,
                                      now: Int64) throws(DPoPProofRefusal) -> DPoPAcceptedProof {
        guard proof.utf8.count <= maximumProofLength else { throw .tooLong }
        let jws: JWS
        do throws(JOSEError) {
            jws = try JWS(compact: proof)
        } catch {
            throw refusal(reading: proof, error)
        }
        guard let type = jws.header.type, isDPoPType(type) else { throw .notDPoPType }
        guard rules.algorithms.contains(jws.header.algorithm) else { throw .algorithmNotAllowed }
        guard let jwk = jws.header.jwk else { throw .keyMissing }
        do throws(JOSEError) {
            try jws.verify(with: try JWSVerificationKey(jwk: jwk, allowing: rules.algorithms))
        } catch {
            switch error {
            case .invalidSignature: throw .signatureInvalid
            // The key's kind (or its own `alg`) does not fit the header's `alg`.
            case .algorithmNotAllowed: throw .algorithmNotAllowed
            default: throw .keyUnusable
            }
        }
        let claims: JWTClaims
        do throws(JOSEError) {
            claims = try JWTClaims(payload: jws.payload)
        } catch {
            throw .malformed
        }
        let jti = try text("jti", of: claims)
        let method = try text("htm", of: claims)
        let target = try text("htu", of: claims)
        guard let issuedAt = claims["iat"]?.integer else {
            throw claims["iat"] == nil ? .claimMissing("iat") : .claimNotValid("iat")
        }
        let accessTokenHash = try text("ath", of: claims)

        guard jti.utf8.count <= maximumJTILength else { throw .jtiTooLong }
        guard method == request.method else { throw .methodMismatch }
        try checkTarget(target, against: request.uri)
        let window = rules.windowSeconds
        guard issuedAt >= saturating(now, minus: window) else { throw .issuedTooLongAgo }
        guard issuedAt <= saturating(now, minus: -window) else { throw .issuedInTheFuture }
        guard ConstantTimeText.equal(accessTokenHash, DPoPProofBuilder.accessTokenHash(request.accessToken)) else {
            throw .accessTokenHashMismatch
        }
        let thumbprint = jwk.thumbprint
        if let bound = request.boundKeyThumbprint, bound != thumbprint { throw .keyNotBound }
        return DPoPAcceptedProof(jti: jti, issuedAt: issuedAt, keyThumbprint: thumbprint,
                                 acceptedUntil: saturating(issuedAt, minus: -window))
    }

    /// `typ` names the media type `application/dpop+jwt`; RFC 7515 §4.1.9 lets the prefix go and
    /// media types compare without case.
    private static func isDPoPType(_ type: String) -> Bool {
        let lowered = type.lowercased()
        return lowered == "dpop+jwt" || lowered == "application/dpop+jwt"
    }

    /// The claim `name` as a non-empty string.
    private static func text(_ name: String, of claims: JWTClaims) throws(DPoPProofRefusal) -> String {
        guard let value = claims[name] else { throw .claimMissing(name) }
        guard let text = value.string, !text.isEmpty else { throw .claimNotValid(name) }
        return text
    }

    /// `htu` names the request's URI: no query or fragment (§4.2), and after normalization the
    /// same scheme, host, port and path.
    private static func checkTarget(_ target: String, against uri: HTTPURL) throws(DPoPProofRefusal) {
        guard !target.contains("?"), !target.contains("#") else { throw .targetHasQuery }
        let named: HTTPURL
        do throws(HTTPURLSyntaxError) {
            named = try HTTPURL(absolute: target, allowsQuery: false)
        } catch {
            // The syntax error quotes the text: not passed on.
            throw .claimNotValid("htu")
        }
        guard named.scheme == uri.scheme, named.host == uri.host, named.port == uri.port, named.path == uri.path else {
            throw .targetMismatch
        }
    }

    /// Why a proof that `JWS(compact:)` refused is refused. Its header is read once more only on
    /// this path, to tell a private key in `jwk` from a public key the relay cannot use.
    private static func refusal(reading proof: some StringProtocol, _ error: JOSEError) -> DPoPProofRefusal {
        switch error {
        case .algorithmNotAllowed, .unsupportedAlgorithm: return .algorithmNotAllowed
        case .invalidKey: return headerKeyHoldsPrivateMembers(proof) ? .keyNotPublic : .keyUnusable
        default: return .malformed
        }
    }

    private static func headerKeyHoldsPrivateMembers(_ proof: some StringProtocol) -> Bool {
        guard let segment = proof.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false).first,
              let header = Base64URL.decode(bytes: Array(segment)),
              let jwk = (try? JSONValue.object(from: header, what: "the JWS header"))?["jwk"] else { return false }
        return JWK.privateMembers.contains { jwk[$0] != nil }
    }

    /// `time - seconds`, held at the ends of `Int64` rather than wrapping (a proof's `iat` may be
    /// anything; a negative `seconds` adds).
    private static func saturating(_ time: Int64, minus seconds: Int64) -> Int64 {
        let (result, overflow) = time.subtractingReportingOverflow(seconds)
        guard overflow else { return result }
        return seconds > 0 ? .min : .max
    }
}

/// The request a DPoP proof must match, as the relay received it.
public struct DPoPProofRequest: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The request method, as sent (`htm` compares case-sensitively).
    public var method: String
    /// `scheme://authority/path` as the relay received the request (the listener's scheme, the
    /// `Host` header, the normalized path); its query is not compared.
    public var uri: HTTPURL
    /// The access token the request carries, for `ath`.
    public var accessToken: String
    /// The RFC 7638 thumbprint the token is bound to (its `cnf.jkt`), when already known: a JWT's
    /// claims say it; an opaque token's introspection says it later, and the caller compares
    /// `DPoPAcceptedProof.keyThumbprint` with it then.
    public var boundKeyThumbprint: String?

    public init(method: String, uri: HTTPURL, accessToken: String, boundKeyThumbprint: String? = nil) {
        self.method = method
        self.uri = uri
        self.accessToken = accessToken
        self.boundKeyThumbprint = boundKeyThumbprint
    }

    /// The method and the URI without its query: the access token is never described (nor a
    /// query, which may carry one, RFC 6750 §2.3).
    public var description: String { "\(method) \(uri.scheme.rawValue)://\(uri.authority)\(uri.path)" }

    public var debugDescription: String { description }

    public var customMirror: Mirror {
        Mirror(self, children: ["request": description], displayStyle: .struct)
    }
}

/// What a route accepts of DPoP proofs.
public struct DPoPProofRules: Sendable, Equatable {
    /// The asymmetric algorithms accepted; HS256 is taken out whatever the caller gives (a proof
    /// is signed with the key in its own header: a shared secret there proves nothing).
    public let algorithms: Set<JWSAlgorithm>
    /// How far `iat` may be from now, either way (RFC 9449 §11.1 leaves the window to the server).
    public let windowSeconds: Int64

    public static let defaultWindowSeconds: Int64 = 60

    public init(algorithms: Set<JWSAlgorithm> = [.es256, .rs256, .ps256, .edDSA], windowSeconds: Int64 = defaultWindowSeconds) {
        self.algorithms = algorithms.subtracting([.hs256])
        self.windowSeconds = max(0, windowSeconds)
    }
}

/// The verdict on a DPoP proof.
public enum DPoPProofVerdict: Sendable, Equatable {
    case accepted(DPoPAcceptedProof)
    case refused(DPoPProofRefusal)
}

/// A proof that passed every check but the replay check, which is its caller's
/// (`ProofReplayMemory.admit`).
public struct DPoPAcceptedProof: Sendable, Equatable {
    public let jti: String
    public let issuedAt: Int64
    /// The RFC 7638 thumbprint of the proof's key, what a bound token's `cnf.jkt` must equal.
    public let keyThumbprint: String
    /// The last second at which this proof's `iat` is still inside the window: until then a
    /// second use of its `jti` must be refused as a replay; after it, the proof is refused as
    /// too old anyway.
    public let acceptedUntil: Int64

    public init(jti: String, issuedAt: Int64, keyThumbprint: String, acceptedUntil: Int64) {
        self.jti = jti
        self.issuedAt = issuedAt
        self.keyThumbprint = keyThumbprint
        self.acceptedUntil = acceptedUntil
    }
}

/// Why a DPoP proof is refused: RFC 9449's `invalid_dpop_proof`, with a description that names
/// the rule, never the proof or a claim's value.
public enum DPoPProofRefusal: Error, Sendable, Equatable, CustomStringConvertible {
    /// Longer than `DPoPProofCheck.maximumProofLength`.
    case tooLong
    /// Not a compact JWS whose header and payload are JSON objects (or with `crit` extensions).
    case malformed
    /// `typ` is absent or not `dpop+jwt`.
    case notDPoPType
    /// `alg` is `none`, HS256, unknown, outside the allowed set, or does not fit the key.
    case algorithmNotAllowed
    /// The header has no `jwk`.
    case keyMissing
    /// The `jwk` holds private (or symmetric) key members.
    case keyNotPublic
    /// The `jwk` is no public key the relay can verify with (type, curve, parameters, `use: enc`).
    case keyUnusable
    case signatureInvalid
    /// A required claim (`jti`, `htm`, `htu`, `iat`, `ath`) is absent.
    case claimMissing(String)
    /// A required claim has the wrong type or is empty (or `htu` is no http(s) URL).
    case claimNotValid(String)
    /// `jti` is longer than `DPoPProofCheck.maximumJTILength`.
    case jtiTooLong
    case methodMismatch
    /// `htu` has a query or a fragment.
    case targetHasQuery
    case targetMismatch
    case issuedTooLongAgo
    case issuedInTheFuture
    case accessTokenHashMismatch
    /// The proof's key is not the one the token is bound to (`cnf.jkt`).
    case keyNotBound
    /// The proof's `jti` was seen before within its window (`ProofReplayMemory`).
    case replayed

    public var description: String {
        switch self {
        case .tooLong: "the DPoP proof is longer than \(DPoPProofCheck.maximumProofLength) bytes"
        case .malformed: "the DPoP proof is not a well-formed JWT"
        case .notDPoPType: "the DPoP proof's typ is not dpop+jwt"
        case .algorithmNotAllowed: "the DPoP proof's alg is not an allowed asymmetric algorithm for its key"
        case .keyMissing: "the DPoP proof has no jwk header"
        case .keyNotPublic: "the DPoP proof's jwk holds a private key"
        case .keyUnusable: "the DPoP proof's jwk is not a usable public key"
        case .signatureInvalid: "the DPoP proof's signature does not verify with its jwk"
        case .claimMissing(let name): "the DPoP proof has no \(name) claim"
        case .claimNotValid(let name): "the DPoP proof's \(name) claim is not valid"
        case .jtiTooLong: "the DPoP proof's jti is longer than \(DPoPProofCheck.maximumJTILength) bytes"
        case .methodMismatch: "the DPoP proof's htm does not match the request method"
        case .targetHasQuery: "the DPoP proof's htu has a query or a fragment"
        case .targetMismatch: "the DPoP proof's htu does not match the request URI"
        case .issuedTooLongAgo: "the DPoP proof was issued too long ago (iat)"
        case .issuedInTheFuture: "the DPoP proof was issued in the future (iat)"
        case .accessTokenHashMismatch: "the DPoP proof's ath does not match the access token"
        case .keyNotBound: "the DPoP proof's key is not the key the access token is bound to"
        case .replayed: "the DPoP proof was used before (jti)"
        }
    }
}
