import Crypto
import JOSE
import SafeText

extension Secret {
    /// A fresh random value for a login (`state`, a browser binding, a nonce, a PKCE verifier):
    /// `byteCount` bytes from `random` as base64url, which goes into a URL, a form or a cookie
    /// unescaped. 32 bytes, 256 bits, is twice RFC 6749 §10.10's 128-bit floor.
    public static func random(byteCount: Int = 32, using random: inout some RandomNumberGenerator) -> Secret {
        Secret(Base64URL.encode(random.bytes(byteCount)))
    }
}
