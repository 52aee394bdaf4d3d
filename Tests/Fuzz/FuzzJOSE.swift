// Fuzz target: the JOSE readers, as ID tokens, JWKS documents and DPoP proofs reach the relay.
//
// The input is read as a compact JWS (text), as a JWKS (JSON bytes) and as base64url.
// Invariants: nothing crashes; a JWS that parses re-serialises to the same text, and one that
// verifies (with the RFC 7515 A.2/A.3 keys, the fuzz HMAC secret, or the key in its own header)
// re-serialises to the input bytes exactly; a JWKS key's JSON reads back as the same key;
// base64url decode(encode(x)) == x, and a text that decodes is the encoding of what it decodes to.

import Crypto
import JOSE

// Held in a global of its own as well: inside `JWSVerificationKey`'s two-payload enum Swift keeps
// the case in the pointer's spare bits, which LeakSanitizer does not recognise as a pointer, so it
// would report the secret's storage as leaked.
private let secret = SymmetricKey(Array("fuzz-hmac-secret-0123456789abcdef".utf8))

private let keys: [JWSVerificationKey] = [
    #"{"kty":"RSA","e":"AQAB","n":"ofgWCuLjybRlzo0tZWJjNiuSfb4p4fAkd_wWJcyQoTbji9k0l8W26mPddxHmfHQp-Vaw-4qPCJrcS2mJPMEzP1Pt0Bm4d4QlL-yRT-SFd2lZS-pCgNMsD1W_YpRPEwOWvG6b32690r2jZ47soMZo9wGzjb_7OMg0LOL-bSf63kpaSHSXndS5z5rexMdbBYUsLA9e-KXBdQOS-UTo7WTBEMa2R2CapHg665xsmtdVMTBQY4uDZlxvb3qCo5ZwKh9kG4LT6_I5IhlJH7aGhyxXFvUK-DWNmoudF8NAco9_h9iaGNj8q2ethFkMLs91kzk2PAcDTW9gb54h4FRWyuXpoQ"}"#,
    #"{"kty":"EC","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}"#,
].map { try! JWSVerificationKey(jwk: JWK(json: Array($0.utf8))) }
    + [JWSVerificationKey(hmacSecret: secret)]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJOSE(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    checkJWS(bytes)
    checkJWKS(bytes)
    checkBase64URL(bytes)
    return 0
}

private func checkJWS(_ bytes: [UInt8]) {
    let text = String(decoding: bytes, as: UTF8.self)
    guard let jws = try? JWS(compact: text) else { return }
    precondition(jws.compactSerialization == text, "a parsed JWS re-serialises to other text")
    var verifiers = keys
    if let jwk = jws.header.jwk, let own = try? JWSVerificationKey(jwk: jwk) { verifiers.append(own) }
    for key in verifiers where (try? jws.verify(with: key)) != nil {
        precondition(Array(jws.compactSerialization.utf8) == bytes, "a verified JWS re-serialises to other bytes")
    }
    if let claims = try? JWTClaims(payload: jws.payload) {
        _ = try? claims.validate(JWTValidationRules(issuer: "joe", audience: "a", nonce: "n"), now: 1_300_000_000)
        precondition((try? JWTClaims(payload: claims.payload)) != nil, "written claims do not read back")
    }
}

private func checkJWKS(_ bytes: [UInt8]) {
    guard let jwks = try? JWKSet(json: bytes) else { return }
    for key in jwks.keys {
        _ = key.thumbprint
        let reread = try? JWK(json: Array(key.jsonValue.serialized.utf8))
        precondition(reread == key, "a JWKS key's JSON reads back as another key")
    }
}

private func checkBase64URL(_ bytes: [UInt8]) {
    precondition(Base64URL.decode(Base64URL.encode(bytes)) == bytes, "base64url decode(encode(x)) != x")
    if let decoded = Base64URL.decode(bytes: bytes) {
        precondition(Array(Base64URL.encode(decoded).utf8) == bytes, "base64url decodes a non-canonical text")
    }
}
