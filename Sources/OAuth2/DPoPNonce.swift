/// A server's `DPoP-Nonce` (RFC 9449 §8.1): `1*NQCHAR`, printable ASCII without `"` and `\`.
/// One that is not is ignored, never put into a proof: it goes into a JSON string and a header.
public enum DPoPNonce {
    /// Longer values are ignored too: a nonce is a short server token, and each proof carries it.
    public static let maxLength = 512

    public static func isValid(_ value: some Collection<UInt8>) -> Bool {
        !value.isEmpty && value.count <= maxLength && value.allSatisfy { byte in
            byte == 0x21 || (byte >= 0x23 && byte <= 0x5B) || (byte >= 0x5D && byte <= 0x7E)
        }
    }
}
