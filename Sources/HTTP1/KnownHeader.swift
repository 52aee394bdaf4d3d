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
    /// What a browser says of where a request comes from (the browser-safety policy reads them:
    /// `RequestPlacement`, `BrowserPolicy`): `Origin` (RFC 6454) and Fetch Metadata (W3C).
    case origin
    case secFetchSite
    case secFetchMode
    case secFetchDest
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
    /// names share both, but the three `sec-fetch-*` names, told apart by their eleventh byte):
    /// classifying a field costs a jump and a comparison or two, not a search. `first` is the
    /// name's first byte with bit 0x20 set: lower case for a letter, and no other byte becomes
    /// one (the spelling is compared in full after).
    @inline(__always)
    private static func candidate(length: Int, first: UInt8, name: UnsafeRawPointer) -> KnownHeader {
        switch length {
        case 2: first == 0x74 ? .te : .other
        case 3: first == 0x76 ? .via : .other
        case 4: first == 0x68 ? .host : .other
        case 6: first == 0x63 ? .cookie : first == 0x65 ? .expect : first == 0x6F ? .origin : .other
        case 7: first == 0x74 ? .trailer : first == 0x75 ? .upgrade : .other
        case 9: first == 0x66 ? .forwarded : .other
        case 10: first == 0x63 ? .connection : first == 0x6B ? .keepAlive : .other
        case 12: first == 0x6D ? .maxForwards : .other
        case 13: first == 0x61 ? .authorization : .other
        case 14: first == 0x63 ? .contentLength : first == 0x73 ? secFetchCandidate(name.load(fromByteOffset: 10, as: UInt8.self)) : .other
        case 15: first == 0x78 ? .xForwardedFor : .other
        case 16: first == 0x70 ? .proxyConnection : first == 0x78 ? .xForwardedHost : .other
        case 17: first == 0x74 ? .transferEncoding : first == 0x78 ? .xForwardedProto : .other
        case 19: first == 0x70 ? .proxyAuthorization : .other
        default: .other
        }
    }

    /// `sec-fetch-site`, `-mode` or `-dest`, by the first letter after `sec-fetch-`.
    @inline(__always)
    private static func secFetchCandidate(_ letter: UInt8) -> KnownHeader {
        switch letter | 0x20 {
        case 0x73: .secFetchSite
        case 0x6D: .secFetchMode
        case 0x64: .secFetchDest
        default: .other
        }
    }

    /// The name in lower case, as `candidate` proposes it.
    @inline(__always)
    private var lowercaseName: StaticString {
        switch self {
        case .other, .underscoredLookalike: ""
        case .host: "host"
        case .connection: "connection"
        case .keepAlive: "keep-alive"
        case .proxyConnection: "proxy-connection"
        case .transferEncoding: "transfer-encoding"
        case .contentLength: "content-length"
        case .te: "te"
        case .trailer: "trailer"
        case .upgrade: "upgrade"
        case .proxyAuthorization: "proxy-authorization"
        case .expect: "expect"
        case .via: "via"
        case .xForwardedFor: "x-forwarded-for"
        case .xForwardedProto: "x-forwarded-proto"
        case .xForwardedHost: "x-forwarded-host"
        case .authorization: "authorization"
        case .forwarded: "forwarded"
        case .cookie: "cookie"
        case .maxForwards: "max-forwards"
        case .origin: "origin"
        case .secFetchSite: "sec-fetch-site"
        case .secFetchMode: "sec-fetch-mode"
        case .secFetchDest: "sec-fetch-dest"
        }
    }

    /// Classifies a raw header name (any case). `lookalikes`: also tell a name that spells one
    /// of the known ones with `_` for `-` (requests only: what a server might misread). No known
    /// name starts with `-`, so a lookalike has the same length and first letter as its name.
    public init(name: UnsafeRawBufferPointer, lookalikes: Bool = false) {
        self = Self.classify(name, lookalikes: lookalikes)
    }

    /// One bit for each known name's length and first letter (either case), at
    /// `(length * 61 + first & 0x1F) & 63`: a name whose bit is clear is none of them, nor an
    /// underscored lookalike (same length, same first letter). Most names are told so at once
    /// (`User-Agent`, `Accept`, `Server`, `Date`, `Content-Type`, ...), without a call to
    /// `classify`; a test checks every known name's bit.
    static let candidateFilter: UInt64 = 0xB00A_2B23_0680_6001

    /// Whether a name of `length` bytes starting with `first` may be a known one (see `candidateFilter`).
    @inline(__always)
    static func mayBeKnown(length: Int, first: UInt8) -> Bool {
        candidateFilter >> UInt64(truncatingIfNeeded: (length &* 61 &+ Int(first & 0x1F)) & 63) & 1 != 0
    }

    /// `init(name:lookalikes:)`, where every field of every head is classified: the candidate
    /// by length and first letter first (most names have none), its spelling apart.
    @inline(__always)
    static func classify(_ name: UnsafeRawBufferPointer, lookalikes: Bool) -> KnownHeader {
        guard name.count >= 2, let base = name.baseAddress else { return .other }
        let header = candidate(length: name.count, first: base.load(as: UInt8.self) | 0x20, name: base)
        return header == .other ? .other : confirm(header, name, lookalikes: lookalikes)
    }

    /// `header` when `name` spells it, else `underscoredLookalike` or `other`.
    @inline(never)
    private static func confirm(_ header: KnownHeader, _ name: UnsafeRawBufferPointer, lookalikes: Bool) -> KnownHeader {
        let known = header.lowercaseName
        let knownBytes = UnsafeRawBufferPointer(start: known.utf8Start, count: known.utf8CodeUnitCount)
        if spells(name, knownBytes) { return header }
        return lookalikes && equalsReadingUnderscoreAsHyphen(name, knownBytes) ? .underscoredLookalike : .other
    }

    /// Whether `name` (any case) is `lowercase`, of the same length: eight bytes at a time, the
    /// last word overlapping the one before (known names are 2 to 19 bytes long; below eight,
    /// the first and last four bytes make one word).
    @inline(__always)
    private static func spells(_ name: UnsafeRawBufferPointer, _ lowercase: UnsafeRawBufferPointer) -> Bool {
        guard let a = name.baseAddress, let b = lowercase.baseAddress else { return false }
        let count = name.count
        @inline(__always) func wordMatches(at offset: Int) -> Bool {
            lowercased(a.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) == b.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
        }
        guard count >= 8 else {
            guard count >= 4 else {
                for offset in 0..<count where ASCII.lowercased(a.load(fromByteOffset: offset, as: UInt8.self)) != b.load(fromByteOffset: offset, as: UInt8.self) {
                    return false
                }
                return true
            }
            // Four to seven bytes: the first four and the last four (overlapping) in one word.
            @inline(__always) func ends(_ bytes: UnsafeRawPointer) -> UInt64 {
                UInt64(bytes.loadUnaligned(as: UInt32.self)) | UInt64(bytes.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self)) << 32
            }
            return lowercased(ends(a)) == ends(b)
        }
        var offset = 0
        while offset + 8 <= count {
            guard wordMatches(at: offset) else { return false }
            offset += 8
        }
        return offset == count || wordMatches(at: count - 8)
    }

    /// Eight bytes with `A`-`Z` made lower case, every other byte unchanged. Per byte, below
    /// 0x80: adding 0x3F sets the high bit from `A` on, adding 0x25 from `[` on; neither carries
    /// into the next byte.
    @inline(__always)
    private static func lowercased(_ word: UInt64) -> UInt64 {
        let high: UInt64 = 0x8080_8080_8080_8080
        let low7 = word & ~high
        let fromA = low7 &+ 0x3F3F_3F3F_3F3F_3F3F
        let pastZ = low7 &+ 0x2525_2525_2525_2525
        let upper = fromA & ~pastZ & ~word & high
        return word | (upper >> 2)
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
