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

    private static let table: [(name: [UInt8], header: KnownHeader)] = ([
        ("host", .host), ("connection", .connection), ("keep-alive", .keepAlive),
        ("proxy-connection", .proxyConnection), ("transfer-encoding", .transferEncoding),
        ("content-length", .contentLength), ("te", .te), ("trailer", .trailer), ("upgrade", .upgrade),
        ("proxy-authorization", .proxyAuthorization), ("expect", .expect), ("via", .via),
        ("x-forwarded-for", .xForwardedFor), ("x-forwarded-proto", .xForwardedProto),
        ("x-forwarded-host", .xForwardedHost), ("authorization", .authorization),
    ] as [(String, KnownHeader)]).map { (Array($0.0.utf8), $0.1) }

    /// The table indexed by name length, so classifying a field compares at most two names.
    private static let byLength: [[(name: [UInt8], header: KnownHeader)]] = {
        var index = Array(repeating: [(name: [UInt8], header: KnownHeader)](), count: 20)
        for entry in table { index[entry.name.count].append(entry) }
        return index
    }()

    /// Classifies a raw header name (any case).
    public init(name: UnsafeRawBufferPointer) {
        self = .other
        guard name.count < Self.byLength.count else { return }
        for entry in Self.byLength[name.count] where ASCII.lower(name[0]) == entry.name[0] {
            if ASCII.equalsIgnoringCase(name, entry.name) {
                self = entry.header
                return
            }
        }
    }
}

/// Byte-level ASCII helpers, so header handling never builds a `String` on the hot path.
public enum ASCII {
    @inline(__always)
    public static func lower(_ byte: UInt8) -> UInt8 {
        byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte
    }

    /// Compares `bytes` to `lowercase` (which must already be lower case), ignoring ASCII case.
    public static func equalsIgnoringCase(_ bytes: UnsafeRawBufferPointer, _ lowercase: [UInt8]) -> Bool {
        guard bytes.count == lowercase.count else { return false }
        for i in 0..<bytes.count where lower(bytes[i]) != lowercase[i] { return false }
        return true
    }

    public static func equalsIgnoringCase(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        guard a.count == b.count else { return false }
        for i in 0..<a.count where lower(a[i]) != lower(b[i]) { return false }
        return true
    }

    /// Calls `body` with each comma-separated element of a list-valued header (RFC 9110 §5.6.1),
    /// trimmed of optional white space; empty elements are skipped.
    public static func forEachListElement(_ value: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) -> Void) {
        var start = 0
        while start <= value.count {
            var end = start
            while end < value.count && value[end] != UInt8(ascii: ",") { end += 1 }
            var lo = start, hi = end
            while lo < hi && (value[lo] == 0x20 || value[lo] == 0x09) { lo += 1 }
            while hi > lo && (value[hi - 1] == 0x20 || value[hi - 1] == 0x09) { hi -= 1 }
            if hi > lo { body(UnsafeRawBufferPointer(rebasing: value[lo..<hi])) }
            start = end + 1
        }
    }
}
