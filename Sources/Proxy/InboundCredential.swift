// InboundCredential: what a request's `Authorization` says of its caller, read for a route with
// `inbound` (RFC 6750 §2.1, RFC 9110 §11.6.2). Pure, over bytes: tested without a socket.
//
//   no Authorization                       → absent          (401, no error code: §3.1)
//   one, another scheme (Basic, ...)       → otherScheme     (401, no error code)
//   one, `Bearer` + one token68            → bearer(token)
//   one, `DPoP` + one token68              → dpop(token)     (RFC 9449 §7.1: its proof is read apart)
//   one, `Bearer`/`DPoP` without a token68 → malformed       (400 invalid_request)
//   two or more                            → malformed       (400 invalid_request: which one counts?)

import HTTP1
import HTTPFields

enum InboundCredential: Equatable {
    case absent
    case otherScheme
    /// Why the request is malformed (no token text in it).
    case malformed(String)
    /// The bearer token, exactly as sent: a view of the head's bytes, valid while the head is (no
    /// copy: a token checked before is found by the digest of these bytes alone).
    case bearer(UnsafeRawBufferPointer)
    /// A DPoP-bound token (`Authorization: DPoP`), a view of the head's bytes as for `bearer`.
    case dpop(UnsafeRawBufferPointer)

    static func == (a: InboundCredential, b: InboundCredential) -> Bool {
        switch (a, b) {
        case (.absent, .absent), (.otherScheme, .otherScheme): true
        case (.malformed(let x), .malformed(let y)): x == y
        case (.bearer(let x), .bearer(let y)), (.dpop(let x), .dpop(let y)): x.elementsEqual(y)
        default: false
        }
    }

    /// The request's `Authorization` fields, read.
    static func read(_ head: HTTPHead) -> InboundCredential {
        var found: UnsafeRawBufferPointer?
        for field in head.fields where field.known == .authorization {
            guard found == nil else { return .malformed("the request has more than one Authorization field") }
            found = head.value(field)
        }
        guard let found else { return .absent }
        return parse(found)
    }

    /// One `Authorization` value: `auth-scheme 1*SP token68`, the scheme case-insensitive; spaces
    /// around the value are allowed (a parser may leave trailing ones).
    static func parse(_ value: UnsafeRawBufferPointer) -> InboundCredential {
        var start = 0, end = value.count
        while start < end && isSpace(value[start]) { start += 1 }
        while end > start && isSpace(value[end - 1]) { end -= 1 }
        var schemeEnd = start
        while schemeEnd < end && ASCII.isTokenCharacter(value[schemeEnd]) { schemeEnd += 1 }
        let scheme = UnsafeRawBufferPointer(rebasing: value[start..<schemeEnd])
        let isBearer = ASCII.equalsIgnoringCase(scheme, bearerScheme)
        guard isBearer || ASCII.equalsIgnoringCase(scheme, dpopScheme) else {
            return schemeEnd > start ? .otherScheme : .malformed("the Authorization field has no authentication scheme")
        }
        let name = isBearer ? "Bearer" : "DPoP"
        var tokenStart = schemeEnd
        while tokenStart < end && isSpace(value[tokenStart]) { tokenStart += 1 }
        // The scheme ends at a space, or at the end (no credentials: refused below).
        guard tokenStart > schemeEnd || tokenStart == end else { return .malformed("the \(name) scheme is not followed by a space") }
        let token = UnsafeRawBufferPointer(rebasing: value[tokenStart..<end])
        guard isToken68(token) else {
            return .malformed("the \(name) credentials are not one token68 (" + (isBearer ? "RFC 6750 §2.1)" : "RFC 9449 §7.1)"))
        }
        return isBearer ? .bearer(token) : .dpop(token)
    }

    /// `1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="`.
    static func isToken68(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var index = 0
        while index < bytes.count && isToken68Character(bytes[index]) { index += 1 }
        guard index > 0 else { return false }
        while index < bytes.count && bytes[index] == UInt8(ascii: "=") { index += 1 }
        return index == bytes.count
    }

    /// Inlined byte tests: a token is hundreds of bytes, checked on every request.
    @inline(__always)
    private static func isToken68Character(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "+"), UInt8(ascii: "/"):
            true
        default:
            false
        }
    }

    private static func isSpace(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }

    private static let bearerScheme = Array("bearer".utf8)
    private static let dpopScheme = Array("dpop".utf8)

    /// What the route answers a request without a usable token (nil: it has one).
    var refusal: InboundRefusal? {
        switch self {
        case .absent, .otherScheme: .noToken
        case .malformed(let why): .malformedRequest(why)
        case .bearer, .dpop: nil
        }
    }
}
