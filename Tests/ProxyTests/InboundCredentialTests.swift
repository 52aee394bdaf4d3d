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
}
