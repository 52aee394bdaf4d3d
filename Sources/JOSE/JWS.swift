/// A JWS in compact serialization (RFC 7515 §7.1): `BASE64URL(header).BASE64URL(payload).BASE64URL(signature)`.
///
/// Reading keeps the two encoded segments as they came, so the signing input is exactly what
/// was signed and `compactSerialization` gives back the very text that was read (base64url is
/// decoded strictly, so no other text has the same bytes). Nothing read is trusted before
/// `verify(with:)` returns.
public struct JWS: Sendable, Equatable {
    public let header: JWSHeader
    public let payload: [UInt8]
    public let signature: [UInt8]
    let encodedHeader: String
    let encodedPayload: String

    /// Reads a compact JWS. Refuses other than three segments, non-canonical base64url, a header
    /// that is not a JSON object with a known `alg` (never `none`), and `crit` extensions.
    public init(compact text: some StringProtocol) throws(JOSEError) {
        let segments = text.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard segments.count == 3 else { throw .malformed("a compact JWS has three dot-separated segments") }
        guard let headerBytes = Base64URL.decode(bytes: Array(segments[0])) else { throw .malformed("the JWS header is not base64url") }
        guard let payload = Base64URL.decode(bytes: Array(segments[1])) else { throw .malformed("the JWS payload is not base64url") }
        guard let signature = Base64URL.decode(bytes: Array(segments[2])) else { throw .malformed("the JWS signature is not base64url") }
        self.header = try JWSHeader(json: headerBytes)
        self.payload = payload
        self.signature = signature
        self.encodedHeader = String(decoding: segments[0], as: UTF8.self)
        self.encodedPayload = String(decoding: segments[1], as: UTF8.self)
    }

    /// Signs `payload` under `header`, whose `alg` is set to the signer's.
    public static func sign(_ payload: [UInt8], header: JWSHeader, with signer: JWSSigner) throws(JOSEError) -> JWS {
        var header = header
        header.algorithm = signer.algorithm
        return try JWS(header: header, encodedHeader: Base64URL.encode(Array(header.jsonValue.serialized.utf8)),
                       payload: payload, signer: signer)
    }

    /// Signs with a header already encoded (a DPoP builder encodes its header once).
    init(header: JWSHeader, encodedHeader: String, payload: [UInt8], signer: JWSSigner) throws(JOSEError) {
        self.header = header
        self.encodedHeader = encodedHeader
        self.encodedPayload = Base64URL.encode(payload)
        self.payload = payload
        self.signature = try signer.signature(for: Self.signingInput(encodedHeader, encodedPayload))
    }

    /// `ASCII(BASE64URL(header) || '.' || BASE64URL(payload))`, what the signature covers.
    public var signingInput: [UInt8] { Self.signingInput(encodedHeader, encodedPayload) }

    static func signingInput(_ header: String, _ payload: String) -> [UInt8] {
        Array(header.utf8) + [UInt8(ascii: ".")] + Array(payload.utf8)
    }

    public var compactSerialization: String {
        encodedHeader + "." + encodedPayload + "." + Base64URL.encode(signature)
    }

    /// Checks the signature with `key`, refusing an `alg` the key does not allow (so a token
    /// whose header says HS256 is never checked with an RSA public key taken as an HMAC secret).
    public func verify(with key: JWSVerificationKey) throws(JOSEError) {
        try key.verify(signature, for: signingInput, algorithm: header.algorithm)
    }
}
