import Crypto

/// Makes DPoP proofs (RFC 9449 §4.2) for one key: the header (`typ: dpop+jwt`, `alg`, the public
/// `jwk`) is encoded once, so a proof per forwarded request costs the claims and one signature.
///
/// Each proof is a pure function of its inputs; the clock and the random source are the caller's.
public struct DPoPProofBuilder: Sendable {
    public let signer: JWSSigner
    public let header: JWSHeader
    let encodedHeader: String
    /// The RFC 7638 thumbprint of the key, what a DPoP-bound token's `cnf.jkt` holds.
    public let keyThumbprint: String

    /// A builder for `signer`, which must hold a private key (DPoP has no HMAC form).
    public init(signer: JWSSigner) throws(JOSEError) {
        guard let jwk = try signer.publicJWK() else { throw .algorithmNotAllowed("DPoP proofs need an asymmetric key, not HS256") }
        self.signer = signer
        self.header = JWSHeader(algorithm: signer.algorithm, type: "dpop+jwt", jwk: jwk)
        self.encodedHeader = Base64URL.encode(Array(header.jsonValue.serialized.utf8))
        self.keyThumbprint = jwk.thumbprint
    }

    /// A proof for a request, made by a `DPoPProofWriter` of its own: for the token thread's
    /// occasional proofs. A thread that signs many keeps one writer (it prepares the key once).
    ///
    /// - Parameters:
    ///   - method: the request method (`htm`), e.g. `POST`.
    ///   - url: the target URI; query and fragment are left out of `htu` (§4.2).
    ///   - accessToken: the token the request carries, for `ath` (the SHA-256 of its ASCII, base64url).
    ///   - nonce: the server's latest `DPoP-Nonce`, if it sent one.
    public func proof(method: String, url: String, accessToken: String? = nil, nonce: String? = nil,
                      now: Int64, random: inout some RandomNumberGenerator) throws(JOSEError) -> String {
        let writer = try DPoPProofWriter(builder: self)
        let ath = accessToken.map { Array(Self.accessTokenHash($0).utf8) }
        let made = Array(method.utf8).withUnsafeBytes { method in
            Array(url.utf8).withUnsafeBytes { url in
                do throws(JOSEError) {
                    return Result<String, JOSEError>.success(try writer.withProof(
                        method: method, origin: UnsafeRawBufferPointer(start: nil, count: 0), target: url, accessTokenHash: ath,
                        nonce: nonce.map { Array($0.utf8) }, now: now, random: &random) { String(decoding: $0, as: UTF8.self) })
                } catch {
                    return .failure(error)
                }
            }
        }
        return try made.get()
    }

    /// `ath` for `accessToken`: the base64url SHA-256 of its ASCII (§4.2).
    public static func accessTokenHash(_ accessToken: String) -> String {
        Base64URL.encode(SHA256.hash(Array(accessToken.utf8)))
    }
}
