internal import COpenSSL

/// A `RandomNumberGenerator` over `RAND_bytes`, for APIs that take an injected random source.
/// A failing CSPRNG stops the process: a generator cannot throw, and continuing with guessable
/// `jti`s or nonces would be worse.
public struct SecureRandomNumberGenerator: RandomNumberGenerator, Sendable {
    public init() {}

    public mutating func next() -> UInt64 {
        var value: UInt64 = 0
        let result = withUnsafeMutableBytes(of: &value) {
            RAND_bytes($0.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32($0.count))
        }
        precondition(result == 1, "RAND_bytes failed: OpenSSL's random generator is not seeded")
        return value
    }
}

extension RandomNumberGenerator {
    /// `count` bytes drawn from the generator, eight at a time.
    public mutating func bytes(_ count: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count + 8)
        while bytes.count < count {
            withUnsafeBytes(of: next().littleEndian) { bytes.append(contentsOf: $0) }
        }
        return Array(bytes.prefix(count))
    }
}
