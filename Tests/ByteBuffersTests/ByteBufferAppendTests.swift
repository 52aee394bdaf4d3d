import ByteBuffers
import XCTest

/// `append` copies short pieces with overlapping words and long ones with memcpy: every length
/// around the boundaries of those paths, at several starting offsets, must copy exactly.
final class ByteBufferAppendTests: XCTestCase {
    func testEveryLengthUpTo40IsCopiedExactlyAfterAnyPrefix() {
        let source = (0..<64).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
        for prefix in [0, 1, 3, 7, 8, 13] {
            for length in 0...40 {
                var buffer = ByteBuffer()
                let lead = [UInt8](repeating: 0xEE, count: prefix)
                lead.withUnsafeBytes { buffer.append($0) }
                source.withUnsafeBytes { buffer.append(UnsafeRawBufferPointer(rebasing: $0[5..<(5 + length)])) }
                XCTAssertEqual(Array(buffer.readableBytes), lead + source[5..<(5 + length)], "\(length) bytes after \(prefix)")
            }
        }
    }

    func testAppendsAcrossGrowthKeepEarlierBytes() {
        var buffer = ByteBuffer()
        var expected: [UInt8] = []
        for length in (1...300).map({ $0 % 23 }) {
            let piece = (0..<length).map { UInt8(truncatingIfNeeded: $0 &+ expected.count) }
            piece.withUnsafeBytes { buffer.append($0) }
            expected += piece
        }
        XCTAssertEqual(Array(buffer.readableBytes), expected)
        XCTAssertGreaterThan(buffer.capacity, 256, "the pieces outgrew the first allocation")
    }

    func testDecimalsAreWrittenExactlyBelowAndAbove1000() {
        for value: UInt64 in [0, 1, 9, 10, 11, 99, 100, 101, 200, 404, 999, 1000, 1001, 65_536, UInt64.max] {
            var buffer = ByteBuffer()
            buffer.append(UInt8(ascii: "x"))
            buffer.appendDecimal(value)
            XCTAssertEqual(String(decoding: buffer.readableBytes, as: UTF8.self), "x\(value)")
        }
        var buffer = ByteBuffer()
        buffer.appendDecimal(-5)
        buffer.appendDecimal(503)
        XCTAssertEqual(String(decoding: buffer.readableBytes, as: UTF8.self), "0503")
    }
}
