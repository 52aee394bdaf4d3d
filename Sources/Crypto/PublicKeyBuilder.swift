internal import COpenSSL

/// JWK parameters to `EVP_PKEY` and back, with OpenSSL 3's `OSSL_PARAM` interface.
enum PublicKeyBuilder {
    static func build(_ components: PublicKeyComponents) throws(CryptoError) -> EVPKey {
        // Whatever path this takes, it leaves OpenSSL's per-thread error queue empty (errors
        // are read into the thrown value first), so nothing stale reaches the next caller.
        OpenSSLErrors.clear()
        defer { OpenSSLErrors.clear() }
        let key: OpaquePointer
        switch components {
        case .rsa(let modulus, let exponent):
            guard !modulus.isEmpty, !exponent.isEmpty, exponent.count <= 8 else { throw .invalidKeyParameters("an RSA exponent of 1 to 8 bytes") }
            let significant = exponent.drop(while: { $0 == 0 })
            guard exponent.last! & 1 == 1, significant.count > 1 || (significant.first ?? 0) > 1 else {
                throw .invalidKeyParameters("an RSA exponent must be odd and greater than 1")
            }
            key = try fromData(type: EVP_PKEY_RSA) { (builder, numbers) throws(CryptoError) in
                let n = try number(modulus, keptIn: &numbers)
                let e = try number(exponent, keptIn: &numbers)
                guard shim_push_rsa_public_key(builder, n, e) == 1 else { throw .openSSL("RSA key parameters") }
            }
        case .ecP256(let x, let y):
            guard x.count == 32, y.count == 32 else { throw .invalidKeyParameters("P-256 coordinates are 32 bytes each") }
            // The SEC 1 uncompressed point, in memory of our own that outlives `fromData` (the
            // builder reads it only in OSSL_PARAM_BLD_to_param).
            let point = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: 65)
            defer { point.deallocate() }
            _ = point.initialize(from: [0x04] + x + y)
            key = try fromData(type: EVP_PKEY_EC) { (builder, _) throws(CryptoError) in
                guard shim_push_p256_public_key(builder, point.baseAddress, point.count) == 1 else { throw .openSSL("EC key parameters") }
            }
        case .ed25519(let x):
            guard x.count == 32 else { throw .invalidKeyParameters("an Ed25519 public key is 32 bytes") }
            guard let made = x.withUnsafeBufferPointer({ EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nil, $0.baseAddress, $0.count) }) else {
                throw .invalidKeyParameters("not an Ed25519 public key")
            }
            key = made
        }
        let result = try EVPKey(adopting: key)
        try checkPublic(result)
        return result
    }

    static func components(of key: EVPKey) throws(CryptoError) -> PublicKeyComponents {
        OpenSSLErrors.clear()
        defer { OpenSSLErrors.clear() }
        switch key.kind {
        case .rsa:
            return .rsa(modulus: try number("n", of: key, width: nil), exponent: try number("e", of: key, width: nil))
        case .ecP256:
            return .ecP256(x: try number("qx", of: key, width: 32), y: try number("qy", of: key, width: 32))
        case .ed25519:
            var x = [UInt8](repeating: 0, count: 32)
            var length = x.count
            guard x.withUnsafeMutableBufferPointer({ EVP_PKEY_get_raw_public_key(key.pointer, $0.baseAddress, &length) }) == 1,
                  length == 32 else { throw .openSSL("reading an Ed25519 key") }
            return .ed25519(x: x)
        }
    }

    /// Runs `fill` on a parameter builder, then makes a public key of `type` from the result.
    /// Builder, parameters, numbers and context are freed on every path.
    private static func fromData(type: Int32,
                                 _ fill: (OpaquePointer, inout [OpaquePointer]) throws(CryptoError) -> Void) throws(CryptoError) -> OpaquePointer {
        guard let builder = OSSL_PARAM_BLD_new() else { throw .openSSL("OSSL_PARAM_BLD_new") }
        var numbers: [OpaquePointer] = []
        defer {
            OSSL_PARAM_BLD_free(builder)
            numbers.forEach { BN_free($0) }
        }
        try fill(builder, &numbers)
        guard let parameters = OSSL_PARAM_BLD_to_param(builder) else { throw .openSSL("key parameters") }
        defer { OSSL_PARAM_free(parameters) }
        // By type id, not name: a context keeps the pointer to the name it was made with.
        guard let context = EVP_PKEY_CTX_new_id(type, nil) else { throw .openSSL("EVP_PKEY_CTX_new_id") }
        defer { EVP_PKEY_CTX_free(context) }
        var key: OpaquePointer?
        guard EVP_PKEY_fromdata_init(context) == 1,
              EVP_PKEY_fromdata(context, &key, shim_EVP_PKEY_PUBLIC_KEY(), parameters) == 1, let key else {
            throw .invalidKeyParameters("OpenSSL refused them (\(OpenSSLErrors.takeReason(fallback: "unknown reason")))")
        }
        return key
    }

    /// A BIGNUM of `bytes`, freed with the others in `fromData`.
    private static func number(_ bytes: [UInt8], keptIn numbers: inout [OpaquePointer]) throws(CryptoError) -> OpaquePointer {
        guard let number = bytes.withUnsafeBufferPointer({ BN_bin2bn($0.baseAddress, Int32($0.count), nil) }) else {
            throw .openSSL("BN_bin2bn")
        }
        numbers.append(number)  // the builder refers to it until OSSL_PARAM_BLD_to_param
        return number
    }

    /// `EVP_PKEY_public_check`: the EC point is on the curve, the RSA numbers are sane.
    private static func checkPublic(_ key: EVPKey) throws(CryptoError) {
        guard let context = EVP_PKEY_CTX_new_from_pkey(nil, key.pointer, nil) else { throw .openSSL("EVP_PKEY_CTX_new_from_pkey") }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_public_check(context) == 1 else {
            throw .invalidKeyParameters("the public key check failed (\(OpenSSLErrors.takeReason(fallback: "unknown reason")))")
        }
    }

    /// A big-number parameter of `key`, minimal (`width` nil) or left-padded to `width` bytes.
    private static func number(_ name: String, of key: EVPKey, width: Int?) throws(CryptoError) -> [UInt8] {
        var number: OpaquePointer?
        guard EVP_PKEY_get_bn_param(key.pointer, name, &number) == 1, let number else { throw .openSSL("reading key parameter \(name)") }
        defer { BN_free(number) }
        let count = width ?? max(1, (Int(BN_num_bits(number)) + 7) / 8)
        var bytes = [UInt8](repeating: 0, count: count)
        guard bytes.withUnsafeMutableBufferPointer({ BN_bn2binpad(number, $0.baseAddress, Int32(count)) }) == Int32(count) else {
            throw .openSSL("reading key parameter \(name)")
        }
        return bytes
    }
}
