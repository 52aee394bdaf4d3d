import Crypto
import FoundationEssentials
import HTTPFields

/// The `user:password` pairs of `forward.proxyAuthFile`, kept as the SHA-256 of each pair's
/// `Basic` credentials (base64 of `user:password`), never as text: a request is admitted when
/// its `Proxy-Authorization: Basic …` hashes to one of them.
public struct ProxyCredentials: Sendable, Equatable {
    /// SHA-256 of the base64 token each pair sends.
    let digests: [[UInt8]]
    /// The user names, for the log (never the passwords).
    public let users: [String]

    /// Why a file's text is not a credentials list; the line number, never the line.
    public struct FormatError: Error, Equatable, Sendable, CustomStringConvertible {
        public let description: String
    }

    /// Reads `text`: one `user:password` per line; empty lines and lines starting with `#` are
    /// skipped. The user may not be empty or hold a colon (RFC 7617 §2); the password may not be
    /// empty. Nothing is trimmed but the line's end (`\r\n` or `\n`).
    public init(parsing text: String) throws(FormatError) {
        var digests: [[UInt8]] = []
        var users: [String] = []
        // "\r\n" is one Character, not a "\n": a file with Windows line ends splits on both.
        let lines = text.split(omittingEmptySubsequences: false) { $0 == "\n" || $0 == "\r\n" }
        for (number, rawLine) in lines.enumerated() {
            let line = rawLine.hasSuffix("\r") ? rawLine.dropLast() : rawLine
            if line.isEmpty || line.hasPrefix("#") { continue }
            guard let colon = line.firstIndex(of: ":") else {
                throw FormatError(description: "line \(number + 1) is not \"user:password\"")
            }
            let user = line[..<colon]
            guard !user.isEmpty else { throw FormatError(description: "line \(number + 1) has an empty user name") }
            guard line.index(after: colon) < line.endIndex else {
                throw FormatError(description: "line \(number + 1) has an empty password")
            }
            guard line.utf8.allSatisfy({ $0 >= 0x20 && $0 != 0x7f }) else {
                throw FormatError(description: "line \(number + 1) holds a control character")
            }
            guard !users.contains(String(user)) else {
                throw FormatError(description: "line \(number + 1) names user \"\(user)\" a second time")
            }
            users.append(String(user))
            digests.append(SHA256.hash(Array(Data(line.utf8).base64EncodedString().utf8)))
        }
        guard !digests.isEmpty else { throw FormatError(description: "it names no \"user:password\"") }
        self.digests = digests
        self.users = users
    }

    /// Whether a `Proxy-Authorization` value (`Basic <token>`, the scheme in any case, one or
    /// more spaces) carries one of the pairs. Every digest is compared, in constant time.
    public func admits(_ value: UnsafeRawBufferPointer) -> Bool {
        let scheme = Array("basic".utf8)
        guard value.count > scheme.count, ASCII.equalsIgnoringCase(UnsafeRawBufferPointer(rebasing: value[..<scheme.count]), scheme),
              value[scheme.count] == UInt8(ascii: " ") else { return false }
        var start = scheme.count
        while start < value.count && value[start] == UInt8(ascii: " ") { start += 1 }
        var end = value.count
        while end > start && (value[end - 1] == UInt8(ascii: " ") || value[end - 1] == UInt8(ascii: "\t")) { end -= 1 }
        guard end > start else { return false }
        let digest = SHA256.hash(UnsafeRawBufferPointer(rebasing: value[start..<end]))
        var admitted = false
        for expected in digests where ConstantTime.equal(expected, digest) { admitted = true }
        return admitted
    }
}
