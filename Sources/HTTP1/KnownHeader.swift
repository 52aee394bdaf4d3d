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

    private static let table: [(name: [UInt8], header: KnownHeader)] = ([
        ("host", .host), ("connection", .connection), ("keep-alive", .keepAlive),
        ("proxy-connection", .proxyConnection), ("transfer-encoding", .transferEncoding),
        ("content-length", .contentLength), ("te", .te), ("trailer", .trailer), ("upgrade", .upgrade),
        ("proxy-authorization", .proxyAuthorization), ("expect", .expect), ("via", .via),
        ("x-forwarded-for", .xForwardedFor), ("x-forwarded-proto", .xForwardedProto),
        ("x-forwarded-host", .xForwardedHost), ("authorization", .authorization), ("forwarded", .forwarded),
        ("cookie", .cookie), ("max-forwards", .maxForwards),
    ] as [(String, KnownHeader)]).map { (Array($0.0.utf8), $0.1) }

    /// The table indexed by name length, so classifying a field compares at most two names.
    private static let byLength: [[(name: [UInt8], header: KnownHeader)]] = {
        var index = Array(repeating: [(name: [UInt8], header: KnownHeader)](), count: 20)
        for entry in table { index[entry.name.count].append(entry) }
        return index
    }()

    /// Classifies a raw header name (any case). `lookalikes`: also tell a name that spells one
    /// of the known ones with `_` for `-` (requests only: what a server might misread).
    public init(name: UnsafeRawBufferPointer, lookalikes: Bool = false) {
        self = .other
        guard name.count < Self.byLength.count else { return }
        for entry in Self.byLength[name.count] where ASCII.lowercased(name[0]) == entry.name[0] {
            if ASCII.equalsIgnoringCase(name, entry.name) {
                self = entry.header
                return
            }
        }
        guard lookalikes else { return }
        for entry in Self.byLength[name.count] where ASCII.lowercased(name[0]) == entry.name[0] {
            if Self.equalsReadingUnderscoreAsHyphen(name, entry.name) {
                self = .underscoredLookalike
                return
            }
        }
    }

    /// Whether `name` spells `known` (lower case) with at least one `_` where it has `-`.
    private static func equalsReadingUnderscoreAsHyphen(_ name: UnsafeRawBufferPointer, _ known: [UInt8]) -> Bool {
        var underscored = false
        for i in 0..<name.count where ASCII.lowercased(name[i]) != known[i] {
            guard name[i] == UInt8(ascii: "_") && known[i] == UInt8(ascii: "-") else { return false }
            underscored = true
        }
        return underscored
    }
}
