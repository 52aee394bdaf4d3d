import ByteBuffers
import HTTP1
import HTTPFields

/// Writes the heads the relay forwards: the request to the upstream and the response to the
/// client, applying the intermediary rules of RFC 9110 §7.6 and RFC 9112:
/// - hop-by-hop fields (Connection and what it lists, Keep-Alive, Proxy-Connection, TE,
///   Transfer-Encoding, Upgrade, Proxy-Authorization) are dropped; the relay writes its own
///   framing and connection fields;
/// - everything else is copied in order, duplicates and case preserved;
/// - `Via` is appended; `X-Forwarded-For/-Proto/-Host` are set (client values kept and
///   extended only when `trustForwardedHeaders` is on).
/// Pure functions over bytes, so the rules are tested without sockets.
enum ForwardedHead {
    /// How the relay frames a body it forwards.
    enum Framing: Equatable {
        case none
        /// The sender's Content-Length field is forwarded with the body as is.
        case contentLength
        /// Re-chunked by the relay (`Transfer-Encoding: chunked` written here).
        case chunked
        /// Delimited by closing the connection (HTTP/1.0 clients only).
        case close
    }

    struct Forwarding {
        /// The client's address as text, for X-Forwarded-For.
        var clientAddress: [UInt8]
        var trustForwardedHeaders: Bool
        var viaSuffix: [UInt8]
        /// The client connected over the TLS listener (`X-Forwarded-Proto: https`).
        var overTLS = false
    }

    /// `upgrade`: the `Upgrade` value to forward (`RoutePlan.allowedUpgrade`), nil for none.
    /// `proof`: the DPoP proof of a `DPoP` token, which then goes as `Authorization: DPoP`.
    /// `claimLines`: the caller's claims as header lines (`inbound.claimHeaders`), written after
    /// the route's own fields. `forwarding` is `inout` only so that the caller's (a connection's
    /// stored property) is read in place: passed by value, its two arrays were retained and
    /// released around the call. It is not changed here.
    static func writeRequest(_ head: HTTPHead, target: UnsafeRawBufferPointer, plan: RoutePlan,
                             framing: Framing, forwarding: inout Forwarding,
                             clientHost: UnsafeRawBufferPointer?, token: UnsafeRawBufferPointer?,
                             proof: UnsafeRawBufferPointer? = nil, upgrade: [UInt8]? = nil, claimLines: [UInt8]? = nil,
                             into out: inout ByteBuffer) {
        out.appendRequestLine(method: head.methodName, target: target)
        if !plan.setsHost { out.append(plan.hostLine) }
        for field in head.fields {
            if head.isHopByHop(field) { continue }
            switch field.known {
            case .host, .xForwardedFor:
                continue
            case .xForwardedProto, .xForwardedHost, .forwarded:
                if !forwarding.trustForwardedHeaders { continue }
            case .underscoredLookalike:
                continue
            case .maxForwards:
                // Counted down on TRACE and OPTIONS (RFC 9110 §7.6.2); meaningless elsewhere.
                if let remaining = head.maxForwards, remaining > 0 {
                    out.append("Max-Forwards: ")
                    out.appendDecimal(remaining - 1)
                    out.append("\r\n")
                    continue
                }
            case .contentLength:
                // Written from the parsed value, so `005` or `+5` spellings never reach a
                // server that might read them differently.
                if framing == .contentLength { appendContentLength(head, into: &out) }
                continue
            default:
                break
            }
            if !plan.replacedNames.isEmpty && plan.replaces(head.name(field)) { continue }
            out.appendField(field, of: head)
        }
        if framing == .chunked { out.append("Transfer-Encoding: chunked\r\n") }
        if let upgrade {
            // An h2c upgrade needs its HTTP2-Settings (RFC 7540 §3.2.1), a field its Connection
            // lists and so dropped above: forwarded with it when the route lets h2c through.
            let settings = head.fields.first { ASCII.equalsIgnoringCase(head.name($0), Self.http2Settings) }
            out.append(settings == nil ? "Connection: upgrade\r\nUpgrade: " : "Connection: upgrade, HTTP2-Settings\r\nUpgrade: ")
            out.append(upgrade)
            out.append("\r\n")
            if let settings { out.appendField(head.name(settings), head.value(settings)) }
        }
        if !plan.setsForwardedFor {
            out.append("X-Forwarded-For: ")
            if forwarding.trustForwardedHeaders {
                // Every X-Forwarded-For field the client sent, in order, then this hop.
                for field in head.fields where field.known == .xForwardedFor {
                    out.append(head.value(field))
                    out.append(", ")
                }
            }
            out.append(forwarding.clientAddress)
            out.append("\r\n")
        }
        if !plan.setsForwardedProto && !(forwarding.trustForwardedHeaders && head.fields.contains { $0.known == .xForwardedProto }) {
            out.append(forwarding.overTLS ? "X-Forwarded-Proto: https\r\n" : "X-Forwarded-Proto: http\r\n")
        }
        if let clientHost, !plan.setsForwardedHost,
           !(forwarding.trustForwardedHeaders && head.fields.contains { $0.known == .xForwardedHost }) {
            out.appendField(staticBytes("X-Forwarded-Host"), clientHost)
        }
        if !plan.setsVia { out.appendVia(versionMinor: head.versionMinor, suffix: forwarding.viaSuffix) }
        out.append(plan.setHeaderLines)
        if let claimLines { out.append(claimLines) }
        if let token, let proof, let prefix = plan.dpopTokenHeaderPrefix {
            out.append(prefix)
            out.append(token)
            out.append("\r\nDPoP: ")
            out.append(proof)
            out.append("\r\n")
        } else if let token, let prefix = plan.tokenHeaderPrefix {
            out.append(prefix)
            out.append(token)
            out.append("\r\n")
        }
        out.appendEndOfHead()
    }

    static func writeResponse(_ head: HTTPHead, framing: Framing, keepAlive: Bool, clientVersionMinor: UInt8,
                              viaSuffix: [UInt8], into out: inout ByteBuffer) {
        writeResponse(head, framing: framing, keepAlive: keepAlive, clientVersionMinor: clientVersionMinor, viaSuffix: viaSuffix,
                      corsOrNil: nil, into: &out)
    }

    /// The answer on a route with a `browser` block: `cors` (a listed origin's fields,
    /// `CORSRules.responseLines`, or `withoutOrigin`) replaces the upstream's own
    /// `Access-Control-*` fields.
    static func writeResponse(_ head: HTTPHead, framing: Framing, keepAlive: Bool, clientVersionMinor: UInt8,
                              viaSuffix: [UInt8], cors: [UInt8], into out: inout ByteBuffer) {
        writeResponse(head, framing: framing, keepAlive: keepAlive, clientVersionMinor: clientVersionMinor, viaSuffix: viaSuffix,
                      corsOrNil: cors, into: &out)
    }

    /// Both of the above: inlined into each, so that the plain one tests no CORS per field.
    @inline(__always)
    private static func writeResponse(_ head: HTTPHead, framing: Framing, keepAlive: Bool, clientVersionMinor: UInt8,
                                      viaSuffix: [UInt8], corsOrNil cors: [UInt8]?, into out: inout ByteBuffer) {
        out.appendStatusLine(head.statusCode, reason: head.reason)
        for field in head.fields {
            if head.isHopByHop(field) { continue }
            if cors != nil && ASCII.startsIgnoringCase(head.name(field), with: Self.accessControlPrefix) { continue }
            if field.known == .contentLength {
                if framing == .contentLength || framing == .none { appendContentLength(head, into: &out) }
                continue
            }
            out.appendField(field, of: head)
        }
        if framing == .chunked { out.append("Transfer-Encoding: chunked\r\n") }
        if let cors { out.append(cors) }
        if head.statusCode == 101 {
            appendUpgrade(head, into: &out)
        } else if !keepAlive || framing == .close {
            out.append("Connection: close\r\n")
        } else if clientVersionMinor == 0 {
            out.append("Connection: keep-alive\r\n")
        }
        out.appendVia(versionMinor: head.versionMinor, suffix: viaSuffix)
        out.appendEndOfHead()
    }

    /// An interim (1xx) response relayed to the client: the fields as they came, minus hop-by-hop.
    static func writeInterim(_ head: HTTPHead, into out: inout ByteBuffer) {
        out.appendStatusLine(head.statusCode, reason: head.reason)
        for field in head.fields where !head.isHopByHop(field) {
            out.appendField(field, of: head)
        }
        out.appendEndOfHead()
    }

    /// The last chunk and the trailers of a chunked body. Trailers never carry what a head
    /// section decides (RFC 9110 §6.5.1: framing, routing, authentication, forwarding fields) nor,
    /// on a request, a field the route sets: an upstream that merges trailers into the head would
    /// take them for the relay's.
    static func writeLastChunk(trailersOf head: HTTPHead, plan: RoutePlan? = nil, into out: inout ByteBuffer) {
        out.append("0\r\n")
        for field in head.trailers where !field.known.isForbiddenInTrailers && !field.listedInConnection {
            if let plan, !plan.replacedNames.isEmpty, plan.replaces(head.name(field)) { continue }
            out.appendField(field, of: head)
        }
        out.appendEndOfHead()
    }

    private static func appendUpgrade(_ head: HTTPHead, into out: inout ByteBuffer) {
        out.append("Connection: upgrade\r\n")
        for field in head.fields where field.known == .upgrade {
            out.appendField(field, of: head)
        }
    }

    private static let http2Settings = Array("http2-settings".utf8)
    private static let accessControlPrefix = Array("access-control-".utf8)

    /// The message's Content-Length as the parser read it, in its one canonical spelling.
    private static func appendContentLength(_ head: HTTPHead, into out: inout ByteBuffer) {
        guard let length = head.contentLength else { return }
        out.appendContentLength(length)
    }
}
