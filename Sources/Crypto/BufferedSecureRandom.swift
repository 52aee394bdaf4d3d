internal import COpenSSL

/// Random numbers from OpenSSL's CSPRNG (`RAND_bytes`), fetched 4 KiB at a time: for a thread
/// that needs a few random bytes for every request (a worker's DPoP `jti`s), where a `RAND_bytes`
/// call per number would cost more than the bytes themselves (its DRBG locks and reseed checks
/// run per call). The bytes are the generator's, handed out once each, in order.
///
/// Not thread-safe: one per thread (a worker's). A failing CSPRNG stops the process, as for
/// `SecureRandomNumberGenerator`.
public final class BufferedSecureRandom: RandomNumberGenerator {
    private static let bufferSize = 4096
    private var buffer = [UInt8](repeating: 0, count: BufferedSecureRandom.bufferSize)
    /// The next unused byte of `buffer`; `bufferSize` when it is used up.
    private var position = BufferedSecureRandom.bufferSize

    public init() {}

    public func next() -> UInt64 {
        if position + 8 > Self.bufferSize { refill() }
        defer { position += 8 }
        return buffer.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: position, as: UInt64.self) }
    }

    private func refill() {
        let result = buffer.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, Int32($0.count)) }
        precondition(result == 1, "RAND_bytes failed: OpenSSL's random generator is not seeded")
        position = 0
    }
}
