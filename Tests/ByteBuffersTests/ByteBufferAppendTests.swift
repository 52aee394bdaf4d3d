import ByteBuffers
import XCTest

/// `append` copies short pieces with overlapping words and long ones with memcpy: every length
/// around the boundaries of those paths (4, 8, 16, 32, 64), at several starting offsets, must copy
/// exactly.
final class ByteBufferAppendTests: XCTestCase {
    func testEveryLengthUpTo80IsCopiedExactlyAfterAnyPrefix() {
        let source = (0..<96).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
        for prefix in [0, 1, 3, 7, 8, 13] {
            for length in 0...80 {
                var buffer = ByteBuffer()
                let lead = [UInt8](repeating: 0xEE, count: prefix)
                lead.withUnsafeBytes { buffer.append($0) }
                source.withUnsafeBytes { buffer.append(UnsafeRawBufferPointer(rebasing: $0[5..<(5 + length)])) }
                XCTAssertEqual(Array(buffer.readableBytes), lead + source[5..<(5 + length)], "\(length) bytes after \(prefix)")
            }
        }
    }

    func testReservedAppendsWriteWhatCheckedOnesWrite() {
        let source = (0..<96).map { UInt8(truncatingIfNeeded: $0 &* 29 &+ 3) }
        for prefix in [0, 5, 250, 255] {
            for length in 0...80 {
                var checked = ByteBuffer(), reserved = ByteBuffer()
                let lead = [UInt8](repeating: 0xAB, count: prefix)
                checked.append(lead)
                reserved.append(lead)
                let piece = Array(source[0..<length])
                checked.append(piece)
                checked.append(UInt8(ascii: "|"))
                checked.append("ok")
                checked.append("12345678")
                reserved.reserveCapacity(reserved.count + length + 1 + 2 + 8)
                piece.withUnsafeBytes { reserved.appendReserved($0) }
                reserved.appendReserved(UInt8(ascii: "|"))
                reserved.appendReserved("ok")
                // "12345678", little-endian.
                reserved.appendReserved(0x3837_3635_3433_3231, count: 8)
                XCTAssertEqual(Array(reserved.readableBytes), Array(checked.readableBytes), "\(length) bytes after \(prefix)")
            }
        }
    }

    func testAWordCountsOnlyItsFirstBytes() {
        var buffer = ByteBuffer()
        buffer.reserveCapacity(16)
        // "abcdefgh": only "abc" counts, and the next piece overwrites the rest.
        buffer.appendReserved(0x6867_6665_6463_6261, count: 3)
        buffer.appendReserved("XY")
        XCTAssertEqual(String(decoding: buffer.readableBytes, as: UTF8.self), "abcXY")
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
