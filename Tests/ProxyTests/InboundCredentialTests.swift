import Config
@testable import Proxy
import XCTest

/// What a request's `Authorization` says of its caller (RFC 6750 §2.1).
final class InboundCredentialTests: XCTestCase {
    /// The credential `value` is, with a bearer token shown as its text (the parsed view is of
    /// bytes that live only as long as the call).
    private func parse(_ value: String) -> Expected {
        Array(value.utf8).withUnsafeBytes { Expected(InboundCredential.parse($0)) }
    }

    enum Expected: Equatable {
        case absent, otherScheme, malformed(String), bearer(String), dpop(String)

        init(_ credential: InboundCredential) {
            switch credential {
            case .absent: self = .absent
            case .otherScheme: self = .otherScheme
            case .malformed(let why): self = .malformed(why)
            case .bearer(let bytes): self = .bearer(String(decoding: bytes, as: UTF8.self))
            case .dpop(let bytes): self = .dpop(String(decoding: bytes, as: UTF8.self))
            }
        }
    }

    func testTheAuthorizationValueTable() {
        let table: [(String, Expected)] = [
            ("Bearer abc.DEF-ghi_jkl~mno+pq/rs==", .bearer("abc.DEF-ghi_jkl~mno+pq/rs==")),
            ("bearer abc", .bearer("abc")),
            ("BEARER abc", .bearer("abc")),
            ("Bearer   abc  ", .bearer("abc")),
            ("  Bearer\tabc", .bearer("abc")),
            ("Basic dXNlcjpwYXNz", .otherScheme),
            ("DPoP abc", .dpop("abc")),
            ("dpop abc.def", .dpop("abc.def")),
            ("DPoP a b", .malformed("the DPoP credentials are not one token68 (RFC 9449 §7.1)")),
            ("DPoPabc", .otherScheme),
            ("Bearerabc", .otherScheme),
            ("Bearer", .malformed("the Bearer credentials are not one token68 (RFC 6750 §2.1)")),
            ("Bearer ", .malformed("the Bearer credentials are not one token68 (RFC 6750 §2.1)")),
            ("Bearer a b", .malformed("the Bearer credentials are not one token68 (RFC 6750 §2.1)")),
            ("Bearer a,b", .malformed("the Bearer credentials are not one token68 (RFC 6750 §2.1)")),
            ("Bearer =abc", .malformed("the Bearer credentials are not one token68 (RFC 6750 §2.1)")),
            ("Bearer ab=c", .malformed("the Bearer credentials are not one token68 (RFC 6750 §2.1)")),
            ("Bearer \"abc\"", .malformed("the Bearer credentials are not one token68 (RFC 6750 §2.1)")),
            ("Bearer/abc", .malformed("the Bearer scheme is not followed by a space")),
            ("", .malformed("the Authorization field has no authentication scheme")),
            ("   ", .malformed("the Authorization field has no authentication scheme")),
        ]
        for (value, expected) in table {
            XCTAssertEqual(parse(value), expected, value)
        }
    }

    func testFieldCountsDecideBeforeTheValue() {
        XCTAssertEqual(credential(of: head("GET / HTTP/1.1", "Host: a")), .absent)
        XCTAssertEqual(credential(of: head("GET / HTTP/1.1", "Host: a", "Authorization: Bearer t1")), .bearer("t1"))
        XCTAssertEqual(credential(of: head("GET / HTTP/1.1", "Host: a", "authorization: Bearer t1", "Authorization: Bearer t1")),
                       .malformed("the request has more than one Authorization field"))
        XCTAssertEqual(credential(of: head("GET / HTTP/1.1", "Host: a", "Authorization: Basic x", "Authorization: Bearer t1")),
                       .malformed("the request has more than one Authorization field"))
        XCTAssertEqual(credential(of: head("GET / HTTP/1.1", "Host: a", "Proxy-Authorization: Bearer t1")), .absent)
    }

    func testEachRefusalIsTheRightAnswer() {
        XCTAssertEqual(InboundCredential.absent.refusal, .noToken)
        XCTAssertEqual(InboundCredential.otherScheme.refusal, .noToken)
        XCTAssertEqual(InboundCredential.malformed("x").refusal, .malformedRequest("x"))
        withBytes("t") { XCTAssertNil(InboundCredential.bearer($0).refusal) }
    }

    private func credential(of text: String) -> Expected {
        Expected(InboundCredential.read(parsedHead(text)))
    }

    // MARK: Bearer or DPoP, as the route's `dpop` setting takes them

    private func presentation(_ lines: [String], mode: InboundDPoP.Mode) -> String {
        switch InboundPresentation.read(parsedHead(head(["GET /orders?page=2 HTTP/1.1", "Host: relay.test:8180"] + lines)), mode: mode) {
        case .bearer(let token): "bearer \(String(decoding: token, as: UTF8.self))"
        case .dpop(let token, let proof): "dpop \(String(decoding: token, as: UTF8.self)) \(String(decoding: proof, as: UTF8.self))"
        case .refused(let refusal): "refused \(refusal)"
        }
    }

    func testThePresentationTable() {
        let table: [([String], InboundDPoP.Mode, String)] = [
            (["Authorization: Bearer t"], .allowed, "bearer t"),
            (["Authorization: Bearer t"], .refused, "bearer t"),
            (["Authorization: Bearer t"], .required, "refused dpopRequired"),
            (["Authorization: DPoP t", "DPoP: p.q.r"], .allowed, "dpop t p.q.r"),
            (["Authorization: DPoP t", "dpop: p.q.r"], .required, "dpop t p.q.r"),
            (["Authorization: DPoP t", "DPoP: p.q.r"], .refused, "refused noToken"),
            (["Authorization: DPoP t"], .allowed, #"refused invalidProof("the request has no DPoP proof (one DPoP header field)")"#),
            (["Authorization: DPoP t", "DPoP: a", "DPoP: b"], .allowed,
             #"refused invalidProof("the request has more than one DPoP header field")"#),
            ([], .required, "refused noToken"),
        ]
        for (lines, mode, expected) in table {
            XCTAssertEqual(presentation(lines, mode: mode), expected, "\(lines) \(mode)")
        }
    }

    func testTheURIAProofNames() {
        let plain = parsedHead(head("GET /orders/%7E42?page=2 HTTP/1.1", "Host: Relay.Test:8180"))
        XCTAssertEqual(InboundPresentation.requestURI(plain, overTLS: false)?.description, "http://relay.test:8180/orders/~42")
        XCTAssertEqual(InboundPresentation.requestURI(plain, overTLS: true)?.description, "https://relay.test:8180/orders/~42")
        let absolute = parsedHead(head("GET http://orders.test/a?b HTTP/1.1", "Host: orders.test"))
        XCTAssertEqual(InboundPresentation.requestURI(absolute, overTLS: false)?.description, "http://orders.test/a")
    }
}
