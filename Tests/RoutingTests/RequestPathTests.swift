@testable import Endpoints
import Routing
import XCTest

/// Request paths are normalized once, before routing.
final class RequestPathTests: XCTestCase {
    func testNormalizationTable() {
        let table: [(input: String, expected: String?)] = [
            ("/", "/"),
            ("/a/b", "/a/b"),
            ("/a/./b", "/a/b"),
            ("/a/b/../c", "/a/c"),
            ("/a/b/..", "/a/"),
            ("/a/.", "/a/"),
            ("/..", "/"),
            ("/../../a", "/a"),
            ("/a/../../b/", "/b/"),
            ("/a//b", "/a//b"),
            ("//", "//"),
            ("/a/b/", "/a/b/"),
            ("/a/%2E%2e/b", "/b"),
            ("/%41%7a%2D%5f%7E%30", "/Az-_~0"),
            ("/a%2fb", "/a%2Fb"),
            ("/a%2F..%2Fb", "/a%2F..%2Fb"),
            ("/%c3%a9", "/%C3%A9"),
            ("/a:b@c!$&'()*+,;=", "/a:b@c!$&'()*+,;="),
            ("/a|b{c}", "/a%7Cb%7Bc%7D"),
            ("/caf\u{E9}", "/caf%C3%A9"),
            ("/..a/.b/a..", "/..a/.b/a.."),
            ("", nil),
            ("a/b", nil),
            ("*", nil),
            ("/a%", nil),
            ("/a%4", nil),
            ("/a%zz", nil),
            ("/a%4g", nil),
            ("/a b", nil),
            ("/a\u{0}b", nil),
            ("/a\tb", nil),
            ("/a\u{7F}", nil),
            ("/a#b", nil),
            ("/a?b", nil),
        ]
        for (input, expected) in table {
            XCTAssertEqual(RequestPath.normalize(input), expected, "normalize(\(input.debugDescription))")
        }
    }

    /// Every path `isNormal` lets through whole is what the walk makes of it, byte for byte:
    /// all paths of up to four bytes after the `/` over bytes of each kind.
    func testAPathThatIsItsOwnNormalFormIsWhatTheWalkMakesOfIt() {
        let alphabet: [UInt8] = Array("a.Z9~:@!/%|? ".utf8) + [0x7F, 0xC3, 0x00]
        var normalFormsSeen = 0
        func check(_ path: [UInt8]) {
            path.withUnsafeBytes { raw in
                var walked: [UInt8] = []
                let walkedValid = RequestPath.walk(raw, into: &walked)
                var normalized: [UInt8] = []
                XCTAssertEqual(RequestPath.normalize(raw, into: &normalized), walkedValid, "\(path)")
                XCTAssertEqual(normalized, walked, "\(path)")
                if RequestPath.isNormal(raw) {
                    normalFormsSeen += 1
                    XCTAssertTrue(walkedValid, "\(path)")
                    XCTAssertEqual(walked, path, "\(path)")
                }
            }
        }
        func extend(_ path: [UInt8], _ left: Int) {
            check(path)
            guard left > 0 else { return }
            for byte in alphabet { extend(path + [byte], left - 1) }
        }
        extend([UInt8(ascii: "/")], 4)
        XCTAssertGreaterThan(normalFormsSeen, 1000)
    }

    func testThePathByteKindsAreTheCharactersOfRFC3986() {
        XCTAssertEqual(RequestPath.pathByteKinds.utf8CodeUnitCount, 256)
        let pathCharacters = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_~!$&'()*+,;=:@".utf8)
        for byte in UInt8(0)...UInt8(255) {
            let expected: Unicode.Scalar = switch byte {
            case UInt8(ascii: "."): "."
            case UInt8(ascii: "/"): "/"
            case _ where pathCharacters.contains(byte): "p"
            default: "_"
            }
            XCTAssertEqual(RequestPath.pathByteKinds.utf8Start[Int(byte)], UInt8(ascii: expected), "byte \(byte)")
        }
    }

    func testNormalizeReusesTheCallersBuffer() {
        var output: [UInt8] = Array("stale contents that must go".utf8)
        let valid = "/x/../y".utf8.withContiguousStorageIfAvailable {
            RequestPath.normalize(UnsafeRawBufferPointer($0), into: &output)
        }
        XCTAssertEqual(valid, true)
        XCTAssertEqual(String(decoding: output, as: UTF8.self), "/y")
    }

    func testStrippingAPrefixAlwaysLeavesALeadingSlash() {
        let cases: [(path: String, prefix: String, expected: String)] = [
            ("/api/x", "/api/", "/x"),
            ("/api/x", "/api", "/x"),
            ("/api", "/api", "/"),
            ("/api/", "/api/", "/"),
            ("/apix", "/api", "/x"),
            ("/x", "/", "/x"),
            ("/x", "", "/x"),
        ]
        for (path, prefix, expected) in cases {
            var output: [UInt8] = Array("/base".utf8)
            Array(path.utf8).withUnsafeBytes { RequestPath.appendStripped($0, prefixLength: prefix.utf8.count, to: &output) }
            XCTAssertEqual(String(decoding: output, as: UTF8.self), "/base" + expected, "strip \(prefix) from \(path)")
        }
    }
}
