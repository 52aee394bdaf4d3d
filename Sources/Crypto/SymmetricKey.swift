/// Secret key bytes (an AES-256 key, an HMAC secret). The bytes are reachable only through
/// `withUnsafeBytes`, and the description shows the length alone, so a key printed by mistake in
/// a log line or an error gives nothing away.
public struct SymmetricKey: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    private let bytes: [UInt8]

    public init(_ bytes: some Collection<UInt8>) {
        self.bytes = Array(bytes)
    }

    /// A fresh key of `byteCount` bytes from `SecureRandom`.
    public static func random(byteCount: Int = 32) throws(CryptoError) -> SymmetricKey {
        SymmetricKey(try SecureRandom.bytes(byteCount))
    }

    public var byteCount: Int { bytes.count }

    public func withUnsafeBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try bytes.withUnsafeBytes(body)
    }

    /// Compared in constant time: the comparison of two secrets must not tell how many leading
    /// bytes matched.
    public static func == (lhs: SymmetricKey, rhs: SymmetricKey) -> Bool {
        ConstantTime.equal(lhs.bytes, rhs.bytes)
    }

    public var description: String { "SymmetricKey(\(bytes.count) bytes, redacted)" }
    public var debugDescription: String { description }
}
