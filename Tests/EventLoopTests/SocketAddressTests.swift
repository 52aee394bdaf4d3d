import EventLoop
import XCTest

/// Checks that `ip` parses, with `port`, into an address of the given family that prints as `printed`.
private func assertParses(_ ip: String, isIPv6: Bool, printsAs printed: String,
                          file: StaticString = #filePath, line: UInt = #line) throws {
    let address = try XCTUnwrap(SocketAddress(ip: ip, port: 8080), file: file, line: line)
    XCTAssertEqual(address.isIPv6, isIPv6, file: file, line: line)
    XCTAssertEqual(address.ipString, ip, file: file, line: line)
    XCTAssertEqual(address.port, 8080, file: file, line: line)
    XCTAssertEqual(address.description, printed, file: file, line: line)
}

final class SocketAddressTests: XCTestCase {
    func testIPv4LiteralParsesAndPrints() throws {
        try assertParses("127.0.0.1", isIPv6: false, printsAs: "127.0.0.1:8080")
    }

    func testIPv6LoopbackParsesAndPrintsInBrackets() throws {
        try assertParses("::1", isIPv6: true, printsAs: "[::1]:8080")
    }

    func testHostNamesAndMalformedLiteralsAreNotAddresses() {
        for text in ["localhost", "", "256.0.0.1", "127.0.0", "127.0.0.1:80", "[::1]", "::1::2", "127.0.0.1 "] {
            XCTAssertNil(SocketAddress(ip: text, port: 80), "parsed \"\(text)\"")
        }
    }

    func testWithPortChangesOnlyThePort() {
        XCTAssertEqual(SocketAddress(ip: "127.0.0.1", port: 1)?.withPort(2), SocketAddress(ip: "127.0.0.1", port: 2))
        XCTAssertEqual(SocketAddress(ip: "::1", port: 1)?.withPort(2), SocketAddress(ip: "::1", port: 2))
    }

    func testAddressesDifferingInPortOrFamilyAreNotEqual() {
        XCTAssertNotEqual(SocketAddress(ip: "127.0.0.1", port: 1), SocketAddress(ip: "127.0.0.1", port: 2))
        XCTAssertNotEqual(SocketAddress(ip: "127.0.0.1", port: 1), SocketAddress(ip: "::ffff:127.0.0.1", port: 1))
    }
}
