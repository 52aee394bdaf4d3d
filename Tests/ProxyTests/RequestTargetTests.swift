@testable import Proxy
import XCTest

/// The parts of a `RequestTarget` as text, so tests compare them as values.
private struct TargetParts: Equatable {
    var path: String
    var queryWithMark: String
    var originForm: String?
    var authority: String?
    var isAsterisk = false
}

private func parts(_ raw: String) -> TargetParts? {
    func text(_ bytes: UnsafeRawBufferPointer) -> String { String(decoding: bytes, as: UTF8.self) }
    return withBytes(raw) { bytes in
        RequestTarget(bytes).map {
            TargetParts(path: text($0.path), queryWithMark: text($0.queryWithMark), originForm: $0.originForm.map(text),
                        authority: $0.authority.map(text), isAsterisk: $0.isAsterisk)
        }
    }
}

final class RequestTargetTests: XCTestCase {
    func testOriginFormWithAQuery() {
        XCTAssertEqual(parts("/a/b?x=1&y"), TargetParts(path: "/a/b", queryWithMark: "?x=1&y", originForm: "/a/b?x=1&y"))
    }

    func testOriginFormWithoutAQuery() {
        XCTAssertEqual(parts("/a/b"), TargetParts(path: "/a/b", queryWithMark: "", originForm: "/a/b"))
    }

    func testAbsoluteFormSplitsAuthorityPathAndQuery() {
        XCTAssertEqual(parts("http://host:8080/p?q"),
                       TargetParts(path: "/p", queryWithMark: "?q", originForm: "/p?q", authority: "host:8080"))
    }

    func testAbsoluteFormWithoutAPathHasPathSlash() {
        XCTAssertEqual(parts("http://host"), TargetParts(path: "/", queryWithMark: "", originForm: "/", authority: "host"))
    }

    func testAbsoluteFormWithAQueryButNoPathHasPathSlashAndLeavesTheOriginFormToTheCaller() {
        // `/?q=1` is not a slice of the input; the connection composes it (UpstreamTargetTests).
        XCTAssertEqual(parts("http://host?q=1"),
                       TargetParts(path: "/", queryWithMark: "?q=1", originForm: nil, authority: "host"))
    }

    func testAbsoluteFormSchemeIgnoresCase() {
        XCTAssertEqual(parts("HTTP://Host/x"), TargetParts(path: "/x", queryWithMark: "", originForm: "/x", authority: "Host"))
    }

    func testAbsoluteFormAcceptsHTTPS() {
        XCTAssertEqual(parts("https://host/x"), TargetParts(path: "/x", queryWithMark: "", originForm: "/x", authority: "host"))
    }

    func testAsteriskFormHasPathSlashAndIsForwardedAsAsterisk() {
        XCTAssertEqual(parts("*"), TargetParts(path: "/", queryWithMark: "", originForm: "*", isAsterisk: true))
    }

    func testTargetsInNoFormAreRejected() {
        for raw in ["", "host/x", "ftp://x/", "http:///x", "http://", "http:/x", "*x", "httpx://h/"] {
            XCTAssertNil(parts(raw), "accepted \"\(raw)\"")
        }
    }

    func testAnAbsoluteFormAuthorityWithUserinfoIsRefused() {
        XCTAssertNil(parts("http://user@b.test/x"))
        XCTAssertNil(parts("http://user:pw@b.test/x"))
    }

    func testHostValuesThatAreAHostAndPort() {
        for host in ["a.test", "a.test:8080", "127.0.0.1", "[::1]", "[::1]:8180", "xn--bcher-kva.example", "a_b.test"] {
            XCTAssertTrue(host.utf8.withContiguousStorageIfAvailable { RequestTarget.isAuthority(UnsafeRawBufferPointer($0)) } ?? false,
                          "refused \(host)")
        }
    }

    func testHostValuesThatAreNot() {
        for host in ["a.test, b.test", "user@a.test", "a.test/evil", "a.test:80x", ":80", "[::1", "[]", "a test", "a.test:8080:1"] {
            XCTAssertFalse(host.utf8.withContiguousStorageIfAvailable { RequestTarget.isAuthority(UnsafeRawBufferPointer($0)) } ?? true,
                           "accepted \(host)")
        }
    }

    func testTheHostByteKindsAreDigitsRegNameBytesAndTheColon() {
        XCTAssertEqual(RequestTarget.hostByteKinds.utf8CodeUnitCount, 256)
        let regName = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-._~%!$&'()*+,;=".utf8)
        for byte in UInt8(0)...UInt8(255) {
            let expected: Unicode.Scalar = switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): "d"
            case UInt8(ascii: ":"): ":"
            case _ where regName.contains(byte): "r"
            default: "_"
            }
            XCTAssertEqual(RequestTarget.hostByteKind(byte), UInt8(ascii: expected), "byte \(byte)")
        }
    }
}
