@testable import HTTP1
import XCTest

/// The word-at-a-time search for the bytes that end a header value or that it must not contain
/// (`HTTPHead.firstLineBreakOrNUL`, which the head reader runs over every field line).
final class HeaderValueBytesTests: XCTestCase {
    private func contains(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes {
            HTTPHead.firstLineBreakOrNUL(in: $0.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!, from: 0, count: $0.count) < $0.count
        }
    }

    func testTheFirstIsFoundPastHTABAndOtherLowBytes() {
        let bytes: [UInt8] = [0x41, 0x09, 0x0B, 0x0C, 0x01, 0x42, 0x43, 0x09, 0x44, 0x0D, 0x0A, 0x00]
        for from in 0..<bytes.count {
            let found = bytes.withUnsafeBytes { HTTPHead.firstLineBreakOrNUL(in: $0.baseAddress!, from: from, count: $0.count) }
            XCTAssertEqual(found, from <= 9 ? 9 : from, "from \(from)")
        }
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
