// InboundPresentation: how a request on a route with `inbound` presents its caller's token,
// read from the head with no I/O (RFC 6750 §2.1, RFC 9449 §4.1 and §7.1), and what the route's
// `dpop` setting makes of it:
//
//   no token, another scheme              → refused(noToken)           (Bearer and/or DPoP offered)
//   Bearer <token>                        → bearer(token)              (dpop "required": refused)
//   DPoP <token> + exactly one DPoP field → dpop(token, proof)         (dpop "refused": as no token)
//   DPoP <token>, no or several DPoP      → refused(invalidProof)
//
// The URI a proof's `htu` must name is the one the client used: the listener's scheme, the
// Host (or an absolute-form target's authority), the path without its query.

import Config
import Endpoints
import HTTP1
import HTTPFields

enum InboundPresentation: Equatable {
    case bearer(UnsafeRawBufferPointer)
    case dpop(token: UnsafeRawBufferPointer, proof: UnsafeRawBufferPointer)
    case refused(InboundRefusal)

    static func == (a: InboundPresentation, b: InboundPresentation) -> Bool {
        switch (a, b) {
        case (.bearer(let x), .bearer(let y)): x.elementsEqual(y)
        case (.dpop(let x, let p), .dpop(let y, let q)): x.elementsEqual(y) && p.elementsEqual(q)
        case (.refused(let x), .refused(let y)): x == y
        default: false
        }
    }

    static let noProof = "the request has no DPoP proof (one DPoP header field)"
    static let severalProofs = "the request has more than one DPoP header field"

    /// The head's presentation for a route whose `dpop` setting is `mode`.
    static func read(_ head: HTTPHead, mode: InboundDPoP.Mode) -> InboundPresentation {
        switch InboundCredential.read(head) {
        case .absent, .otherScheme:
            return .refused(.noToken)
        case .malformed(let why):
            return .refused(.malformedRequest(why))
        case .bearer(let token):
            return mode == .required ? .refused(.dpopRequired) : .bearer(token)
        case .dpop(let token):
            // A route that takes no DPoP knows no such scheme (RFC 6750 §3: as no token).
            guard mode != .refused else { return .refused(.noToken) }
            var proof: UnsafeRawBufferPointer?
            for field in head.fields where ASCII.equalsIgnoringCase(head.name(field), dpopName) {
                guard proof == nil else { return .refused(.invalidProof(severalProofs)) }
                proof = head.value(field)
            }
            guard let proof, !proof.isEmpty else { return .refused(.invalidProof(noProof)) }
            return .dpop(token: token, proof: proof)
        }
    }

    /// `scheme://authority/path` of the request as the client sent it (`overTLS`: it came to the
    /// TLS listener); nil when the Host or the path cannot make a URL.
    static func requestURI(_ head: HTTPHead, overTLS: Bool) -> HTTPURL? {
        guard let target = RequestTarget(head.target), let authority = target.authority ?? head.host, !authority.isEmpty else { return nil }
        let text = (overTLS ? "https://" : "http://") + String(decoding: authority, as: UTF8.self) + String(decoding: target.path, as: UTF8.self)
        return try? HTTPURL(absolute: text, allowsQuery: false)
    }

    private static let dpopName = Array("dpop".utf8)
}
