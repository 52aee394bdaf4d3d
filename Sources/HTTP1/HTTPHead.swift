internal import CLLHTTP
#if canImport(Glibc)
import Glibc
#endif
import ByteBuffers
import HTTPFields

/// The head (start line and header fields) of one request or response, plus trailers.
/// A parser reuses one `HTTPHead` for every message on its connection; its storage grows on the
/// first message and keeps its capacity, so a keep-alive connection allocates nothing per
/// request once warm, and an idle connection that never sent anything holds nothing.
/// Views returned by `name(_:)`, `value(_:)`, `target` are valid until the next `feed`.
public final class HTTPHead {
    public internal(set) var bytes = ByteBuffer()
    var fieldList = FieldList()
    var trailerList = FieldList()
    /// The header fields, in order (a view: valid until the parser's next `feed`).
    public var fields: UnsafeMutableBufferPointer<FieldSlot> { fieldList.view }
    /// The trailer fields of a chunked message, in order (a view, like `fields`).
    public var trailers: UnsafeMutableBufferPointer<FieldSlot> { trailerList.view }

    // Request line.
    public internal(set) var method: UInt8 = 0
    @usableFromInline var targetStart = 0
    @usableFromInline var targetLength = 0
    // Status line.
    public internal(set) var statusCode = 0
    @usableFromInline var reasonStart = 0
    @usableFromInline var reasonLength = 0

    public internal(set) var versionMajor: UInt8 = 1
    public internal(set) var versionMinor: UInt8 = 1
    /// Framing, from the parser at the end of the head.
    public internal(set) var isChunked = false
    /// A Transfer-Encoding field is present (whatever it lists).
    var hasTransferEncoding = false
    /// A `Connection` field is present.
    var hasConnectionField = false
    /// A `Connection` header lists Content-Length, Transfer-Encoding or Host (see HeadRules).
    var connectionListsFramingField = false
    public internal(set) var contentLength: UInt64?
    /// The message asks to keep the connection (HTTP/1.1 default, or 1.0 with keep-alive).
    public internal(set) var keepAlive = true
    /// A request asking for a protocol switch (`Upgrade` + `Connection: upgrade`), or CONNECT.
    public internal(set) var isUpgrade = false
    /// Index into `fields` of the Host header, if any.
    public internal(set) var hostIndex: Int?
    /// Where the Host field's value lies in `bytes` (with `hostIndex`), for the inlinable `host`.
    @usableFromInline var hostStart = 0
    @usableFromInline var hostLength = 0
    /// Where `Origin` and the `Sec-Fetch-*` fields are (a request's).
    public internal(set) var fetchMetadata = FetchMetadataFields()

    /// Field slots a head keeps between messages (20 bytes each).
    static let keptFieldCapacity = 64

    init() {}

    func reset() {
        bytes.clear()
        bytes.shrink(ifLargerThan: 64 * 1024)
        fieldList.removeAll(keepingAtMost: Self.keptFieldCapacity)
        trailerList.removeAll(keepingAtMost: Self.keptFieldCapacity)
        method = 0
        targetStart = 0; targetLength = 0
        statusCode = 0
        reasonStart = 0; reasonLength = 0
        versionMajor = 1; versionMinor = 1
        isChunked = false
        hasTransferEncoding = false
        hasConnectionField = false
        connectionListsFramingField = false
        contentLength = nil
        keepAlive = true
        isUpgrade = false
        hostIndex = nil
        fetchMetadata = FetchMetadataFields()
    }

    // The accessors the proxy reads on every request (`target`, `host`, `name`, `value`, `reason`)
    // are inlinable: a call each across the module boundary cost more than the read.
    @inlinable @inline(__always)
    func slice(_ start: Int, _ count: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: bytes.baseAddress.map { UnsafeRawPointer($0 + start) }, count: count)
    }

    @inlinable
    public func name(_ field: FieldSlot) -> UnsafeRawBufferPointer {
        slice(Int(field.nameStart), Int(field.nameLength))
    }

    @inlinable
    public func value(_ field: FieldSlot) -> UnsafeRawBufferPointer {
        slice(Int(field.valueStart), Int(field.valueLength))
    }

    /// The field's line as it arrived, `name: value` CRLF, when it arrived in exactly the
    /// spelling `appendField` writes (one space after the colon, none after the value); nil
    /// otherwise. The head keeps its bytes as they came, and the reader noted the spelling.
    @inlinable @inline(__always)
    public func receivedLine(_ field: FieldSlot) -> UnsafeRawBufferPointer? {
        guard field.arrivedAsWritten, let base = bytes.baseAddress else { return nil }
        return UnsafeRawBufferPointer(start: base + Int(field.nameStart), count: Int(field.nameLength) + Int(field.valueLength) + 4)
    }

    /// The request-target exactly as received.
    @inlinable public var target: UnsafeRawBufferPointer { slice(targetStart, targetLength) }
    @inlinable public var reason: UnsafeRawBufferPointer { slice(reasonStart, reasonLength) }
    @inlinable public var host: UnsafeRawBufferPointer? { hostIndex == nil ? nil : slice(hostStart, hostLength) }

    /// The method's name as llhttp spells it (`GET`, `M-SEARCH`, ...). The usual ones from the
    /// binary's literals: every forwarded request writes its method, and llhttp's name costs a
    /// call and a `strlen`.
    public var methodName: UnsafeRawBufferPointer {
        switch UInt32(method) {
        case HTTP_GET.rawValue: return staticBytes("GET")
        case HTTP_POST.rawValue: return staticBytes("POST")
        case HTTP_HEAD.rawValue: return staticBytes("HEAD")
        case HTTP_PUT.rawValue: return staticBytes("PUT")
        case HTTP_DELETE.rawValue: return staticBytes("DELETE")
        default:
            let name = llhttp_method_name(llhttp_method_t(UInt32(method)))!
            return UnsafeRawBufferPointer(start: name, count: strlen(name))
        }
    }

    public var isHead: Bool { method == UInt8(HTTP_HEAD.rawValue) }
    public var isConnect: Bool { method == UInt8(HTTP_CONNECT.rawValue) }
    public var isTrace: Bool { method == UInt8(HTTP_TRACE.rawValue) }
    public var isOptions: Bool { method == UInt8(HTTP_OPTIONS.rawValue) }

    /// `Max-Forwards` (RFC 9110 §7.6.2) of a TRACE or OPTIONS request: nil when absent, not a
    /// number, or on any other method (where it means nothing).
    public var maxForwards: UInt64? {
        guard isTrace || isOptions, let field = fields.first(where: { $0.known == .maxForwards }) else { return nil }
        let text = value(field)
        guard !text.isEmpty, text.count <= 18, text.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return text.reduce(0) { $0 * 10 + UInt64($1 - 0x30) }
    }

    /// Whether the field is connection-specific and must not be forwarded as is.
    @inline(__always)
    public func isHopByHop(_ field: FieldSlot) -> Bool {
        field.known.isHopByHop || field.listedInConnection
    }

    /// Whether any `Connection` header lists `token` (lower case), e.g. `close` or `upgrade`.
    public func connectionHas(_ token: [UInt8]) -> Bool {
        var found = false
        for field in fields where field.known == .connection {
            ASCII.forEachListElement(value(field)) { if ASCII.equalsIgnoringCase($0, token) { found = true } }
        }
        return found
    }

    /// Whether the Transfer-Encoding fields list `chunked` once and nothing else (`chunked,
    /// chunked` would have to be decoded twice; an empty list frames nothing).
    func transferCodingIsOnlyChunked() -> Bool {
        var codings = 0
        var onlyChunked = true
        for field in fields where field.known == .transferEncoding {
            ASCII.forEachListElement(value(field)) {
                codings += 1
                if !ASCII.equalsIgnoringCase($0, Self.chunked) { onlyChunked = false }
            }
        }
        return onlyChunked && codings == 1
    }



    private static let chunked = Array("chunked".utf8)

    /// Whether `value` is `keep-alive` in any case, in two loads: setting bit 0x20 lowers a
    /// letter and keeps `-`, and of the other bytes only CR would become `-`, which no value holds.
    @inline(__always)
    static func isKeepAlive(_ value: UnsafeRawBufferPointer) -> Bool {
        guard value.count == 10, let base = value.baseAddress else { return false }
        // "keep-ali" and "ve", little-endian.
        return base.loadUnaligned(as: UInt64.self) | 0x2020_2020_2020_2020 == 0x696C_612D_7065_656B
            && base.loadUnaligned(fromByteOffset: 8, as: UInt16.self) | 0x2020 == 0x6576
    }

    /// Marks every field named by a `Connection` header (RFC 9110 §7.6.1). A listed name that
    /// is a known header matches the fields classified as it (classification is exact); any
    /// other name is compared with the fields that are not known headers.
    func markConnectionListedFields() {
        guard hasConnectionField else { return }
        for field in fields where field.known == .connection {
            // Most responses say only `keep-alive`, which names a field dropped anyway.
            if Self.isKeepAlive(value(field)) { continue }
            ASCII.forEachListElement(value(field)) { token in
                let listed = KnownHeader(name: token)
                // `keep-alive`, `upgrade` and the like name fields that are dropped anyway (and
                // none of them frames the message): nothing to mark.
                if listed.isHopByHop && listed != .transferEncoding { return }
                for i in fields.indices where !fields[i].listedInConnection
                    && (listed == .other ? (fields[i].known == .other || fields[i].known == .underscoredLookalike)
                                           && ASCII.equalsIgnoringCase(name(fields[i]), token)
                                         : fields[i].known == listed) {
                    fields[i].listedInConnection = true
                    // Removing one of these as hop-by-hop would let the next hop read the body,
                    // or the target, differently from the relay.
                    let known = fields[i].known
                    if known == .contentLength || known == .transferEncoding || known == .host { connectionListsFramingField = true }
                }
            }
        }
    }
}
