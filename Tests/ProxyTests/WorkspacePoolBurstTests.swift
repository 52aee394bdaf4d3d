import HTTP1
@testable import Proxy
import XCTest

/// Counts what a pool reports freed beyond its bound.
private final class CountingRelease: BurstReleasing {
    var freed = 0
    func poolFreed() { freed += 1 }
}

private let limits = HeaderLimits(maxHeadBytes: 8192, maxFieldCount: 100)

/// The workspace pool under a burst: bounded, reporting what it frees, trimmed when it is over.
final class WorkspacePoolBurstTests: XCTestCase {
    /// Lends `count` workspaces at once and takes them all back.
    private func burst(_ pool: WorkspacePool, _ count: Int) {
        let lent = (0..<count).map { _ in pool.lend(to: nil, limits: limits) }
        for workspace in lent { pool.takeBack(workspace) }
    }

    func testAPoolKeepsAtMostMaxSpareAndReportsEachWorkspaceItFreesBeyond() {
        let pool = WorkspacePool()
        let release = CountingRelease()
        pool.release = release
        burst(pool, WorkspacePool.maxSpare + 40)
        XCTAssertEqual(pool.spareCount, WorkspacePool.maxSpare)
        XCTAssertEqual(release.freed, 40)
    }

    func testASteadyLoadReportsNothing() {
        let pool = WorkspacePool()
        let release = CountingRelease()
        pool.release = release
        for _ in 0..<1000 { burst(pool, 8) }
        XCTAssertEqual(release.freed, 0)
        XCTAssertEqual(pool.spareCount, 8)
    }

    func testTrimmingAfterABurstKeepsTheMostRecentlyReturnedFew() {
        let pool = WorkspacePool()
        let lent = (0..<WorkspacePool.maxSpare).map { _ in pool.lend(to: nil, limits: limits) }
        for workspace in lent { pool.takeBack(workspace) }
        pool.trimAfterBurst()
        XCTAssertEqual(pool.spareCount, WorkspacePool.sparesAfterBurst)
        XCTAssertTrue(pool.lend(to: nil, limits: limits) === lent.last, "the warmest is lent first")
    }

    func testTrimmingAPoolWithFewSparesKeepsThemAll() {
        let pool = WorkspacePool()
        burst(pool, 3)
        pool.trimAfterBurst()
        XCTAssertEqual(pool.spareCount, 3)
    }
}
