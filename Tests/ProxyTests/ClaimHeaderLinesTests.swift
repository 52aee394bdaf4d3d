import Config
import JOSE
import JSON
@testable import Proxy
import XCTest

/// A verified caller's claims as header lines for the upstream: what each kind of value becomes,
/// and what is never sent.
final class ClaimHeaderLinesTests: XCTestCase {
    private func text(_ value: JSONValue) -> Result<String, ClaimHeaderLines.WithheldValue> {
        ClaimHeaderLines.text(of: value)
    }

    func testTheValueTable() {
        let table: [(JSONValue, Result<String, ClaimHeaderLines.WithheldValue>)] = [
            (.string("alice@example.test"), .success("alice@example.test")),
            (.string(""), .failure(.init(.empty))),
            (.string(" alice"), .failure(.init(.surroundingWhitespace))),
            (.string("alice "), .failure(.init(.surroundingWhitespace))),
            (.string(" "), .failure(.init(.surroundingWhitespace))),
            (.string("alice smith"), .success("alice smith")),
            (.string("Zoë"), .success("Zoë")),
            (.integer(42), .success("42")),
            (.number(1.5), .success("1.5")),
            (.bool(true), .success("true")),
            (.bool(false), .success("false")),
            (.array([.string("admins"), .string("dev ops")]), .success("admins, dev ops")),
            (.array([]), .failure(.init(.empty))),
            (.array([.string("admins"), .string("")]), .failure(.init(.empty))),
            (.array([.string("admins "), .string("dev")]), .failure(.init(.surroundingWhitespace))),
            (.array([.string("admins,root"), .string("dev")]), .failure(.init(.commaInArrayItem))),
            (.array([.string("a, b")]), .failure(.init(.commaInArrayItem))),
            (.string("a, b"), .success("a, b")),
            (.array([.string("a"), .integer(1)]), .failure(.init(.notRepresentable))),
            (.object([JSONMember("a", .string("b"))]), .failure(.init(.notRepresentable))),
            (.null, .failure(.init(.notRepresentable))),
            (.string("alice\r\nX-Admin: true"), .failure(.init(.controlCharacter))),
            (.string("alice\nX"), .failure(.init(.controlCharacter))),
            (.string("a\u{0}b"), .failure(.init(.controlCharacter))),
            (.string("a\tb"), .failure(.init(.controlCharacter))),
            (.string("a\u{7F}b"), .failure(.init(.controlCharacter))),
            (.array([.string("ok"), .string("bad\r\n")]), .failure(.init(.controlCharacter))),
        ]
        for (value, expected) in table {
            XCTAssertEqual(text(value), expected, "\(value)")
        }
    }

    func testLinesFollowTheConfiguredOrderAndSkipAbsentClaims() {
        var claims = JWTClaims()
        claims["sub"] = .string("alice")
        claims["groups"] = .array([.string("a"), .string("b")])
        claims["email"] = .string("evil\r\nX-Forwarded-User: root")
        claims["org"] = .object([])
        let rendered = ClaimHeaderLines.render(claims, as: [
            ClaimHeader(claim: "groups", header: "X-Forwarded-Groups"), ClaimHeader(claim: "name", header: "X-Forwarded-Name"),
            ClaimHeader(claim: "email", header: "X-Forwarded-Email"), ClaimHeader(claim: "sub", header: "X-Forwarded-User"),
            ClaimHeader(claim: "org", header: "X-Org"),
        ])
        XCTAssertEqual(String(decoding: rendered.lines, as: UTF8.self), "X-Forwarded-Groups: a, b\r\nX-Forwarded-User: alice\r\n")
        XCTAssertEqual(rendered.withheld.map(\.claim), ["email", "org"])
        XCTAssertEqual(rendered.withheld.map(\.why), [.controlCharacter, .notRepresentable])
    }
}
