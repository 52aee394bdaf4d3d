import ByteBuffers
import XCTest

/// A loop's spare write-buffer storage after a burst: trimmed to a few, the warmest kept.
final class BufferPoolTrimTests: XCTestCase {
    /// A buffer holding `bytes`, its storage borrowed from `pool` when it has spare.
    private func filled(from pool: BufferPool, _ bytes: Int) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.borrowStorage(from: pool)
        buffer.append([UInt8](repeating: 0x61, count: bytes))
        return buffer
    }

    private func giveBack(_ buffer: consuming ByteBuffer, to pool: BufferPool) {
        buffer.clear()
        buffer.returnStorage(to: pool)
    }

    func testTrimKeepsTheMostRecentlyReturnedStorages() {
        let pool = BufferPool(maxSpare: 8)
        // Six writes wait at once, and drain in order of size: the last returned (the largest)
        // is the warmest.
        let first = filled(from: pool, 100), second = filled(from: pool, 200), third = filled(from: pool, 300)
        let fourth = filled(from: pool, 400), fifth = filled(from: pool, 500), sixth = filled(from: pool, 600)
        giveBack(first, to: pool)
        giveBack(second, to: pool)
        giveBack(third, to: pool)
        giveBack(fourth, to: pool)
        giveBack(fifth, to: pool)
        giveBack(sixth, to: pool)
        XCTAssertEqual(pool.spareCount, 6)
        pool.trim(keeping: 2)
        XCTAssertEqual(pool.spareCount, 2)
        let warmest = filled(from: pool, 1)
        XCTAssertGreaterThanOrEqual(warmest.capacity, 600)
        let next = filled(from: pool, 1)
        XCTAssertGreaterThanOrEqual(next.capacity, 500)
        XCTAssertLessThan(next.capacity, 600)
        XCTAssertEqual(pool.spareCount, 0)
    }

    func testTrimKeepingMoreThanThePoolHoldsChangesNothing() {
        let pool = BufferPool(maxSpare: 8)
        let first = filled(from: pool, 10), second = filled(from: pool, 10), third = filled(from: pool, 10)
        giveBack(first, to: pool)
        giveBack(second, to: pool)
        giveBack(third, to: pool)
        pool.trim(keeping: 5)
        XCTAssertEqual(pool.spareCount, 3)
        pool.trim(keeping: 0)
        XCTAssertEqual(pool.spareCount, 0)
    }
}
