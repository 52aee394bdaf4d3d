/// Where one header field of a parsed head lies in the head's byte storage (`HTTPHead.bytes`):
/// offsets, not a copy, so parsing and forwarding a request make no allocation per field. Read
/// its name and value through `HTTPHead.name(_:)` and `value(_:)`, valid until the parser's next
/// `feed`. (A field the relay owns, such as a token request's, is an `HTTPField`.)
public struct FieldSlot: Sendable {
    public var nameStart: Int32
    public var nameLength: Int32
    public var valueStart: Int32
    public var valueLength: Int32
    public var known: KnownHeader
    /// Named by a `Connection` header of the same message, so hop-by-hop too.
    public var listedInConnection: Bool
    /// The line arrived spelled as `appendField` writes it, `name: value` CRLF (one space after
    /// the colon, none after the value), so it is copied as it came (`HTTPHead.receivedLine`).
    public var arrivedAsWritten: Bool
}
