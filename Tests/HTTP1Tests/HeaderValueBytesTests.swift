@testable import HTTP1
import XCTest

/// The word-at-a-time search for the bytes a header value must not contain.
final class HeaderValueBytesTests: XCTestCase {
    private func contains(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { HTTP1Parser.containsNULOrLineBreak($0.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!, count: $0.count) }
    }

    func testEachForbiddenByteIsFoundAtEveryPositionOfLongAndShortValues() {
        for length in [1, 7, 8, 9, 15, 16, 17, 29, 64] {
            for position in 0..<length {
                for forbidden: UInt8 in [0x00, 0x0A, 0x0D] {
                    var value = [UInt8](repeating: UInt8(ascii: "a"), count: length)
                    value[position] = forbidden
                    XCTAssertTrue(contains(value), "byte \(forbidden) at \(position) of \(length)")
                }
            }
        }
    }

    func testNeighbouringAndHighBytesAreAllowed() {
        let allowed = (0...255).map(UInt8.init).filter { $0 != 0x00 && $0 != 0x0A && $0 != 0x0D }
        XCTAssertFalse(contains(allowed))
        XCTAssertFalse(contains([0x09, 0x0B, 0x0C, 0x0E, 0x01, 0x80, 0x8A, 0x8D, 0xFF, 0x20, 0x2A, 0x2D]))
        XCTAssertFalse(contains([]))
    }
}
