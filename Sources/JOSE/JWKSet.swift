import JSON

/// A JWK Set (RFC 7517 §5), as an IdP publishes at its `jwks_uri`, with the lookup ID-token
/// validation needs.
///
/// Keys the relay cannot use (another `kty` or curve, symmetric keys, bad parameters) are left
/// out rather than failing the whole set, as §5 asks; `skippedCount` says how many.
public struct JWKSet: Sendable, Equatable {
    public let keys: [JWK]
    public let skippedCount: Int

    public init(keys: [JWK]) {
        self.keys = keys
        self.skippedCount = 0
    }

    public init(json: [UInt8]) throws(JOSEError) {
        let document = try JSONValue.object(from: json, what: "the JWKS")
        guard case .array(let entries)? = document["keys"] else { throw .malformed("the JWKS has no keys array") }
        var keys: [JWK] = []
        for entry in entries {
            // A key whose parameters make no valid public key is as unusable as an unknown type.
            if let key = try? JWK(object: entry), (try? key.publicKey()) != nil { keys.append(key) }
        }
        self.keys = keys
        self.skippedCount = entries.count - keys.count
    }

    /// The key with `kid` `keyID`.
    public func key(withID keyID: String) -> JWK? {
        keys.first { $0.keyID == keyID }
    }

    /// The keys that may have signed a JWS with `header`: the one named by its `kid`, or without
    /// a `kid` every signing key whose type fits the algorithm. Throws `.keyNotFound` when none
    /// does, so the caller can refetch the JWKS once (keys rotate).
    public func candidates(for header: JWSHeader) throws(JOSEError) -> [JWK] {
        let usable = keys.filter { key in
            key.use != "enc" && (key.algorithm == nil || key.algorithm == header.algorithm.rawValue)
        }
        let found = if let keyID = header.keyID { usable.filter { $0.keyID == keyID } } else {
            usable.filter { key in (try? key.publicKey()).map { JWSAlgorithm.algorithms(for: $0.kind).contains(header.algorithm) } ?? false }
        }
        guard !found.isEmpty else { throw .keyNotFound(keyID: header.keyID.map(JOSEError.shown)) }
        return found
    }

    /// Verifies `jws` with the key it names (or, without `kid`, with any fitting key), allowing
    /// only `algorithms`; returns the key that verified it. HS256 is never allowed here.
    @discardableResult
    public func verify(_ jws: JWS, allowing algorithms: Set<JWSAlgorithm>) throws(JOSEError) -> JWK {
        var lastError = JOSEError.invalidSignature
        for key in try candidates(for: jws.header) {
            do {
                try jws.verify(with: try JWSVerificationKey(jwk: key, allowing: algorithms))
                return key
            } catch {
                lastError = error
            }
        }
        throw lastError
    }
}
