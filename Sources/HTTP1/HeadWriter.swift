import ByteBuffers

/// The one way the relay writes an HTTP/1.1 head: forwarded requests and responses, its own
/// answers (problems, the admin and demo endpoints) and the token client's requests all write
/// their lines with these, so the framing of a head (`SP`, `CRLF`, `: `) is spelled once.
/// Callers choose the fields; nothing here validates names or values (they come from a parsed
/// head or from the relay's own constants and checked configuration). The lines of a relayed
/// head are inlined always: each is written once or twice a request, where a call cost a fifth
/// of the line.
extension ByteBuffer {
    /// `METHOD target HTTP/1.1` CRLF, after one capacity check for the line.
    @inlinable @inline(__always)
    public mutating func appendRequestLine(method: UnsafeRawBufferPointer, target: UnsafeRawBufferPointer) {
        reserveCapacity(count &+ method.count &+ target.count &+ 12)
        appendReserved(method)
        appendReserved(UInt8(ascii: " "))
        appendReserved(target)
        appendReserved(" HTTP/1.1\r\n")
    }

    public mutating func appendRequestLine(method: String, target: String) {
        append(utf8: method)
        append(UInt8(ascii: " "))
        append(utf8: target)
        append(" HTTP/1.1\r\n")
    }

    /// `HTTP/1.1 status reason` CRLF; the reason is the standard phrase when none is given.
    public mutating func appendStatusLine(_ status: Int, reason: String? = nil) {
        append("HTTP/1.1 ")
        appendDecimal(status)
        append(UInt8(ascii: " "))
        append(utf8: reason ?? HTTPStatus.reasonPhrase(status))
        append("\r\n")
    }

    /// The status line of a relayed response, with the reason as the upstream sent it. A
    /// three-digit status (every relayed one: `framingProblem` refuses a head with another) goes
    /// with `HTTP/1.1 ` and the spaces around it in two stores, after one capacity check for the
    /// line.
    @inlinable @inline(__always)
    public mutating func appendStatusLine(_ status: Int, reason: UnsafeRawBufferPointer) {
        guard status >= 100 && status <= 999 else {
            append("HTTP/1.1 ")
            appendDecimal(status)
            append(UInt8(ascii: " "))
            append(reason)
            append("\r\n")
            return
        }
        reserveCapacity(count &+ reason.count &+ 16)
        // "HTTP/1.1", then SP, the three digits, SP (little-endian: the first byte lowest).
        appendReserved(0x312E_312F_5054_5448, count: 8)
        let code = UInt64(truncatingIfNeeded: status)
        let digits = (code / 100 &+ 0x30) | (code / 10 % 10 &+ 0x30) << 8 | (code % 10 &+ 0x30) << 16
        appendReserved(0x20_0000_0020 | digits << 8, count: 5)
        appendReserved(reason)
        appendReserved("\r\n")
    }

    /// `name: value` CRLF, after one capacity check for the line.
    @inlinable
    public mutating func appendField(_ name: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) {
        reserveCapacity(count &+ name.count &+ value.count &+ 4)
        appendReserved(name)
        appendReserved(": ")
        appendReserved(value)
        appendReserved("\r\n")
    }

    /// A parsed field, `name: value` CRLF: copied in one piece when it arrived spelled so
    /// (`HTTPHead.receivedLine`), as most fields do. Inlined always: it is called for most
    /// fields of every head the relay forwards.
    @inlinable @inline(__always)
    public mutating func appendField(_ field: FieldSlot, of head: HTTPHead) {
        if let line = head.receivedLine(field) {
            append(line)
        } else {
            appendField(head.name(field), head.value(field))
        }
    }

    public mutating func appendField(_ name: String, _ value: String) {
        append(utf8: name)
        append(": ")
        append(utf8: value)
        append("\r\n")
    }

    /// `Content-Length: n` CRLF, in the one spelling the relay sends.
    @inlinable
    public mutating func appendContentLength(_ length: UInt64) {
        append("Content-Length: ")
        appendDecimal(length)
        append("\r\n")
    }

    /// `Via: 1.x pseudonym` CRLF for a message of HTTP/1.`versionMinor`; `suffix` is the
    /// prepared ` pseudonym` CRLF.
    @inlinable @inline(__always)
    public mutating func appendVia(versionMinor: UInt8, suffix: [UInt8]) {
        suffix.withUnsafeBytes { suffix in
            reserveCapacity(count &+ suffix.count &+ 8)
            // "Via: 1.0" or "Via: 1.1", little-endian.
            appendReserved(versionMinor == 0 ? 0x302E_3120_3A61_6956 : 0x312E_3120_3A61_6956, count: 8)
            appendReserved(suffix)
        }
    }

    /// The empty line that ends a head.
    @inlinable @inline(__always)
    public mutating func appendEndOfHead() {
        append("\r\n")
    }
}

/// Standard reason phrases (RFC 9110 §15) for the statuses the relay answers with itself.
public enum HTTPStatus {
    public static func reasonPhrase(_ status: Int) -> String {
        switch status {
        case 100: "Continue"
        case 101: "Switching Protocols"
        case 200: "OK"
        case 201: "Created"
        case 202: "Accepted"
        case 204: "No Content"
        case 302: "Found"
        case 303: "See Other"
        case 304: "Not Modified"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 408: "Request Timeout"
        case 413: "Content Too Large"
        case 422: "Unprocessable Content"
        case 429: "Too Many Requests"
        case 431: "Request Header Fields Too Large"
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        case 504: "Gateway Timeout"
        case 505: "HTTP Version Not Supported"
        default: "Status"
        }
    }
}
