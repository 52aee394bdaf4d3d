import HTTPFields

/// The header names the proxy acts on, recognised once per field when the parser finishes the
/// name, so the hot path compares a small enum instead of bytes.
public enum KnownHeader: UInt8, Sendable {
    case other
    case host
    case connection
    case keepAlive
    case proxyConnection
    case transferEncoding
    case contentLength
    case te
    case trailer
    case upgrade
    case proxyAuthorization
    case expect
    case via
    case xForwardedFor
    case xForwardedProto
    case xForwardedHost
    case authorization
    case forwarded
    case cookie
    case maxForwards
    /// A name that is one of the above with `_` for `-` (`X_Forwarded_For`, `Content_Length`):
    /// servers that map names CGI-style (`HTTP_X_FORWARDED_FOR`) read it as that field, so the
    /// relay never forwards one.
    case underscoredLookalike

    /// Headers that describe one connection (RFC 9110 §7.6.1) or its framing (RFC 9112 §6), and
    /// so are never forwarded as they came; the proxy writes its own where it needs them.
    public var isHopByHop: Bool {
        switch self {
        case .connection, .keepAlive, .proxyConnection, .transferEncoding, .te, .upgrade, .proxyAuthorization:
            return true
        default:
            return false
        }
    }

    /// Fields a trailer section must not carry (RFC 9110 §6.5.1): framing, routing, request
    /// modifiers, authentication, and what the relay itself sets. An upstream that merges trailers
    /// into the head would otherwise take the client's value for the relay's.
    public var isForbiddenInTrailers: Bool {
        self != .other
    }

    /// The one known name a raw name can be, by its length and first letter (no two known
    /// names share both): classifying a field costs a jump and one comparison, not a search.
    @inline(__always)
    private static func candidate(length: Int, first: UInt8) -> (name: StaticString, header: KnownHeader)? {
        switch (length, first) {
        case (2, 0x74): ("te", .te)
        case (3, 0x76): ("via", .via)
        case (4, 0x68): ("host", .host)
        case (6, 0x63): ("cookie", .cookie)
        case (6, 0x65): ("expect", .expect)
        case (7, 0x74): ("trailer", .trailer)
        case (7, 0x75): ("upgrade", .upgrade)
        case (9, 0x66): ("forwarded", .forwarded)
        case (10, 0x63): ("connection", .connection)
        case (10, 0x6B): ("keep-alive", .keepAlive)
        case (12, 0x6D): ("max-forwards", .maxForwards)
        case (13, 0x61): ("authorization", .authorization)
        case (14, 0x63): ("content-length", .contentLength)
        case (15, 0x78): ("x-forwarded-for", .xForwardedFor)
        case (16, 0x70): ("proxy-connection", .proxyConnection)
        case (16, 0x78): ("x-forwarded-host", .xForwardedHost)
        case (17, 0x74): ("transfer-encoding", .transferEncoding)
        case (17, 0x78): ("x-forwarded-proto", .xForwardedProto)
        case (19, 0x70): ("proxy-authorization", .proxyAuthorization)
        default: nil
        }
    }

    /// Classifies a raw header name (any case). `lookalikes`: also tell a name that spells one
    /// of the known ones with `_` for `-` (requests only: what a server might misread). No known
    /// name starts with `-`, so a lookalike has the same length and first letter as its name.
    public init(name: UnsafeRawBufferPointer, lookalikes: Bool = false) {
        self = .other
        guard let first = name.first, let (known, header) = Self.candidate(length: name.count, first: ASCII.lowercased(first)) else {
            return
        }
        let knownBytes = UnsafeRawBufferPointer(start: known.utf8Start, count: known.utf8CodeUnitCount)
        if Self.spells(name, knownBytes) {
            self = header
        } else if lookalikes && Self.equalsReadingUnderscoreAsHyphen(name, knownBytes) {
            self = .underscoredLookalike
        }
    }

    /// Whether `name` (any case) is `lowercase`, of the same length.
    @inline(__always)
    private static func spells(_ name: UnsafeRawBufferPointer, _ lowercase: UnsafeRawBufferPointer) -> Bool {
        guard let a = name.baseAddress?.assumingMemoryBound(to: UInt8.self),
              let b = lowercase.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return false }
        for i in 0..<name.count where ASCII.lowercased(a[i]) != b[i] { return false }
        return true
    }

    /// Whether `name` spells `known` (lower case) with at least one `_` where it has `-`.
    private static func equalsReadingUnderscoreAsHyphen(_ name: UnsafeRawBufferPointer, _ known: UnsafeRawBufferPointer) -> Bool {
        var underscored = false
        for i in 0..<name.count where ASCII.lowercased(name[i]) != known[i] {
            guard name[i] == UInt8(ascii: "_") && known[i] == UInt8(ascii: "-") else { return false }
            underscored = true
        }
        return underscored
    }
}
