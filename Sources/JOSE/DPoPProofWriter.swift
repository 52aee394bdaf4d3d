import Crypto

/// Writes DPoP proofs (RFC 9449 §4.2) for one key, on one thread: the relay's workers sign a
/// proof for every request they forward with a DPoP-bound token, so this is the cheap form of
/// `DPoPProofBuilder.proof`. The header segment is encoded once, the claims are written as bytes
/// into buffers the writer keeps, and the key's signing state is prepared once
/// (`SigningContext`): a proof costs its claims, one SHA-256 and one signature, and allocates
/// nothing once the buffers have grown to a proof's size.
///
/// The claims, in this order: `jti` (12 random bytes, base64url: the 96 bits RFC 9449 §4.2 asks
/// for, in 16 characters), `htm`, `htu`, `iat`, then `ath` and `nonce` when given. Nothing else:
/// no white space, and `ath` only because the request carries an access token (§4.2). `htu` is the target URI without query and fragment (§4.2); bytes that
/// may not appear in a URI (controls, space, `"`, `\`, non-ASCII) are percent-encoded, so the
/// claim is always a URI and its JSON string needs no escape.
///
/// Not thread-safe (see `SigningContext`); make one per thread.
public final class DPoPProofWriter {
    public let builder: DPoPProofBuilder
    private let signing: SigningContext
    /// `BASE64URL(header) '.'`.
    private let headerSegment: [UInt8]
    private var claims: [UInt8] = []
    private var signature: [UInt8] = []
    private var proof: [UInt8] = []
    /// `iat` as written last, with its decimal digits: the clock's second changes far less often
    /// than proofs are made.
    private var issuedAt: (seconds: Int64, digits: [UInt8]) = (0, [UInt8(ascii: "0")])

    public init(builder: DPoPProofBuilder) throws(JOSEError) {
        guard case .privateKey(let key) = builder.signer.material, let algorithm = builder.signer.algorithm.signatureAlgorithm else {
            throw .algorithmNotAllowed("DPoP proofs need an asymmetric key, not HS256")
        }
        self.builder = builder
        do throws(CryptoError) {
            signing = try SigningContext(key: key, algorithm: algorithm)
        } catch {
            throw .crypto(error)
        }
        headerSegment = Array(builder.encodedHeader.utf8) + [UInt8(ascii: ".")]
    }

    /// Makes a proof and calls `body` with its compact serialization, which stays valid only
    /// during the call (the next proof reuses its bytes).
    ///
    /// - Parameters:
    ///   - method: `htm`, e.g. `GET`.
    ///   - origin: the start of `htu`: `scheme://authority` (may be empty when `target` is a whole URL).
    ///   - target: the rest of `htu`; it ends at the first `?` or `#`.
    ///   - accessTokenHash: `ath`, already base64url (`DPoPProofBuilder.accessTokenHash`); nil for a token request.
    ///   - nonce: the server's latest `DPoP-Nonce`, if it sent one.
    ///   - now: `iat`, Unix seconds.
    public func withProof<Result>(method: UnsafeRawBufferPointer, origin: UnsafeRawBufferPointer, target: UnsafeRawBufferPointer,
                                  accessTokenHash: [UInt8]?, nonce: [UInt8]?, now: Int64,
                                  random: inout some RandomNumberGenerator,
                                  _ body: (UnsafeRawBufferPointer) -> Result) throws(JOSEError) -> Result {
        // The buffers are worked on as locals (taken out of the object and put back, keeping
        // their capacity): appending to a class's stored array byte by byte would check
        // exclusive access on every byte.
        var claims: [UInt8] = [], proof: [UInt8] = [], signature: [UInt8] = []
        swap(&claims, &self.claims)
        swap(&proof, &self.proof)
        swap(&signature, &self.signature)
        defer {
            swap(&claims, &self.claims)
            swap(&proof, &self.proof)
            swap(&signature, &self.signature)
        }
        if issuedAt.seconds != now {
            var digits: [UInt8] = []
            Self.appendDecimal(now, to: &digits)
            issuedAt = (now, digits)
        }
        Self.writeClaims(method: method, origin: origin, target: target, accessTokenHash: accessTokenHash, nonce: nonce,
                         issuedAt: issuedAt.digits, random: &random, into: &claims)
        proof.removeAll(keepingCapacity: true)
        proof.append(contentsOf: headerSegment)
        claims.withUnsafeBytes { Base64URL.append(encoding: $0, to: &proof) }
        signature.removeAll(keepingCapacity: true)
        let failure = proof.withUnsafeBytes { input -> CryptoError? in
            do throws(CryptoError) {
                try signing.sign(input, appendingTo: &signature)
                return nil
            } catch {
                return error
            }
        }
        if let failure { throw .crypto(failure) }
        proof.append(UInt8(ascii: "."))
        signature.withUnsafeBytes { Base64URL.append(encoding: $0, to: &proof) }
        return proof.withUnsafeBytes(body)
    }

    private static func writeClaims(method: UnsafeRawBufferPointer, origin: UnsafeRawBufferPointer, target: UnsafeRawBufferPointer,
                                    accessTokenHash: [UInt8]?, nonce: [UInt8]?, issuedAt: [UInt8],
                                    random: inout some RandomNumberGenerator, into claims: inout [UInt8]) {
        claims.removeAll(keepingCapacity: true)
        claims.append(contentsOf: jtiStart)
        var jti = (random.next(), UInt32(truncatingIfNeeded: random.next()))
        withUnsafeBytes(of: &jti) { Base64URL.append(encoding: $0, to: &claims) } // 12 bytes: the tuple's size
        claims.append(contentsOf: htmStart)
        appendJSONCharacters(method, to: &claims)
        claims.append(contentsOf: htuStart)
        appendURICharacters(origin, to: &claims)
        appendURICharacters(target, to: &claims, stoppingAtQuery: true)
        claims.append(contentsOf: iatStart)
        claims.append(contentsOf: issuedAt)
        if let accessTokenHash {
            claims.append(contentsOf: athStart)
            accessTokenHash.withUnsafeBytes { appendJSONCharacters($0, to: &claims) }
            claims.append(UInt8(ascii: "\""))
        }
        if let nonce {
            claims.append(contentsOf: nonceStart)
            nonce.withUnsafeBytes { appendJSONCharacters($0, to: &claims) }
            claims.append(UInt8(ascii: "\""))
        }
        claims.append(UInt8(ascii: "}"))
    }

    private static let jtiStart = Array(#"{"jti":""#.utf8)
    private static let htmStart = Array(#"","htm":""#.utf8)
    private static let htuStart = Array(#"","htu":""#.utf8)
    private static let iatStart = Array(#"","iat":"#.utf8)
    private static let athStart = Array(#","ath":""#.utf8)
    private static let nonceStart = Array(#","nonce":""#.utf8)
    private static let hexDigits = Array("0123456789ABCDEF".utf8)

    /// The inside of a JSON string: `"` and `\` escaped, control characters as `\u00XX`. Bytes
    /// that need no escape — every `ath`, nonce and method the relay writes — are appended in one
    /// copy rather than one by one.
    static func appendJSONCharacters(_ bytes: UnsafeRawBufferPointer, to out: inout [UInt8]) {
        if !bytes.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
            out.append(contentsOf: bytes)
            return
        }
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                out.append(UInt8(ascii: "\\"))
                out.append(byte)
            case 0..<0x20:
                out.append(contentsOf: #"\u00"#.utf8)
                out.append(hexDigits[Int(byte >> 4)])
                out.append(hexDigits[Int(byte & 15)])
            default:
                out.append(byte)
            }
        }
    }

    /// URI characters as they are; any other byte percent-encoded. With `stoppingAtQuery`, up to
    /// the first `?` or `#`.
    static func appendURICharacters(_ bytes: UnsafeRawBufferPointer, to out: inout [UInt8], stoppingAtQuery: Bool = false) {
        func endsTarget(_ byte: UInt8) -> Bool {
            stoppingAtQuery && (byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#"))
        }
        // The run of URI characters before the query is appended in one copy: a whole `htu`, in
        // the common case.
        let plain = bytes.firstIndex { endsTarget($0) || !isURICharacter($0) } ?? bytes.count
        out.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[..<plain]))
        for byte in UnsafeRawBufferPointer(rebasing: bytes[plain...]) {
            if endsTarget(byte) { return }
            if isURICharacter(byte) {
                out.append(byte)
            } else {
                out.append(UInt8(ascii: "%"))
                out.append(hexDigits[Int(byte >> 4)])
                out.append(hexDigits[Int(byte & 15)])
            }
        }
    }

    /// A byte that may stand as it is in a URI and in a JSON string: printable ASCII but `"` and `\`.
    private static func isURICharacter(_ byte: UInt8) -> Bool {
        byte > 0x20 && byte < 0x7F && byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "\\")
    }

    static func appendDecimal(_ value: Int64, to out: inout [UInt8]) {
        if value < 0 { out.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0) // 24 bytes: room for 20 digits
        let count = withUnsafeMutableBytes(of: &digits) { buffer -> Int in
            var count = 0
            repeat {
                buffer[count] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
                count += 1
            } while magnitude > 0
            return count
        }
        withUnsafeBytes(of: &digits) { buffer in
            for index in stride(from: count - 1, through: 0, by: -1) { out.append(buffer[index]) }
        }
    }
}
