internal import COpenSSL

/// Converts ECDSA P-256 signatures between OpenSSL's DER `ECDSA-Sig-Value` and the fixed-size
/// big-endian r ‖ s (32 + 32 bytes) of JWS (RFC 7518 §3.4).
enum ECDSASignature {
    static let componentByteCount = 32

    static func raw(fromDER der: [UInt8]) throws(CryptoError) -> [UInt8] {
        let signature: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_ECDSA_SIG(nil, &cursor, buffer.count)
        }
        guard let signature else { throw .openSSL("reading an ECDSA signature") }
        defer { ECDSA_SIG_free(signature) }
        var r: OpaquePointer?
        var s: OpaquePointer?
        ECDSA_SIG_get0(signature, &r, &s)
        var raw = [UInt8](repeating: 0, count: 2 * componentByteCount)
        let written = raw.withUnsafeMutableBufferPointer { buffer in
            (BN_bn2binpad(r, buffer.baseAddress, Int32(componentByteCount)),
             BN_bn2binpad(s, buffer.baseAddress! + componentByteCount, Int32(componentByteCount)))
        }
        guard written.0 == Int32(componentByteCount), written.1 == Int32(componentByteCount) else {
            throw .openSSL("writing an ECDSA signature")
        }
        return raw
    }

    /// Appends r ‖ s read from a DER `ECDSA-Sig-Value` (SEQUENCE of two positive INTEGERs, each
    /// at most 32 bytes after its sign byte) without allocating; false when `der` is not one.
    /// For signatures OpenSSL just made, so the checks only guard against the impossible.
    static func appendRaw(fromDER der: ArraySlice<UInt8>, to out: inout [UInt8]) -> Bool {
        var index = der.startIndex
        func byte() -> UInt8? {
            guard index < der.endIndex else { return nil }
            defer { index += 1 }
            return der[index]
        }
        // Short-form lengths only: a P-256 signature is at most 72 bytes.
        guard byte() == 0x30, let total = byte(), total < 0x80, Int(total) == der.endIndex - index else { return false }
        let start = out.count
        for _ in 0..<2 {
            guard byte() == 0x02, let length = byte(), length > 0, length < 0x80, index + Int(length) <= der.endIndex else {
                out.removeSubrange(start...)
                return false
            }
            var integer = der[index..<(index + Int(length))]
            index += Int(length)
            // A leading zero only keeps a high bit from reading as a sign.
            while integer.count > componentByteCount, integer.first == 0 { integer = integer.dropFirst() }
            guard integer.count <= componentByteCount else {
                out.removeSubrange(start...)
                return false
            }
            out.append(contentsOf: repeatElement(0, count: componentByteCount - integer.count))
            out.append(contentsOf: integer)
        }
        guard index == der.endIndex else {
            out.removeSubrange(start...)
            return false
        }
        return true
    }

    /// The DER form of r ‖ s, or nil when `raw` is not 64 bytes (such a signature cannot verify).
    static func der(fromRaw raw: [UInt8]) -> [UInt8]? {
        guard raw.count == 2 * componentByteCount, let signature = ECDSA_SIG_new() else { return nil }
        defer { ECDSA_SIG_free(signature) }
        let (r, s) = raw.withUnsafeBufferPointer { buffer in
            (BN_bin2bn(buffer.baseAddress, Int32(componentByteCount), nil),
             BN_bin2bn(buffer.baseAddress! + componentByteCount, Int32(componentByteCount), nil))
        }
        // ECDSA_SIG_set0 takes both numbers on success; on failure they are still ours.
        guard let r, let s, ECDSA_SIG_set0(signature, r, s) == 1 else {
            BN_free(r)
            BN_free(s)
            return nil
        }
        let length = i2d_ECDSA_SIG(signature, nil)
        guard length > 0 else { return nil }
        var der = [UInt8](repeating: 0, count: Int(length))
        let written = der.withUnsafeMutableBufferPointer { buffer in
            var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
            return i2d_ECDSA_SIG(signature, &cursor)
        }
        return written == length ? der : nil
    }
}
