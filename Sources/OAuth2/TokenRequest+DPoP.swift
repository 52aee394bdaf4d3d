import HTTPFields
import JOSE

extension TokenRequest {
    /// The request with a `DPoP` proof of `key` (RFC 9449 §5): `htm` POST, `htu` the token URL,
    /// `iat` = `unixTime`, a new `jti` from `random`, and `nonce`, the token endpoint's latest
    /// `DPoP-Nonce`. Like a client assertion, a proof is single-use: make one per request sent,
    /// a retry included.
    public func withDPoPProof(_ key: DPoPKey, nonce: String?, unixTime: Int64,
                              random: inout some RandomNumberGenerator) throws(TokenEndpointError) -> TokenRequest {
        let proof: String
        do throws(JOSEError) {
            proof = try key.builder.proof(method: method, url: url.description, nonce: nonce, now: unixTime, random: &random)
        } catch {
            throw .dpopProofFailed(reason: error.description)
        }
        var signed = self
        signed.headers.removeAll { $0.name.lowercased() == "dpop" }
        signed.headers.append(HTTPField(name: "DPoP", value: proof))
        return signed
    }
}
