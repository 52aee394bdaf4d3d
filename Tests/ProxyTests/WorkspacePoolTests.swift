import ByteBuffers
import HTTP1
@testable import Proxy
import XCTest

/// Counts the requests a lent parser reports.
private final class CountingDelegate: HTTP1ParserDelegate {
    var heads = 0
    var messages = 0
    func parserDidParseHead(_ parser: HTTP1Parser) -> HTTP1Parser.BodyExpectation {
        heads += 1
        return .framed
    }
    func parser(_ parser: HTTP1Parser, didParseBody bytes: UnsafeRawBufferPointer) {}
    func parser(_ parser: HTTP1Parser, didStartChunkOfSize size: UInt64) {}
    func parserDidFinishChunk(_ parser: HTTP1Parser) {}
    func parserDidFinishMessage(_ parser: HTTP1Parser) -> Bool {
        messages += 1
        return false
    }
}

private let limits = HeaderLimits(maxHeadBytes: 8192, maxFieldCount: 100)

private func feed(_ parser: HTTP1Parser, _ text: String) -> HTTP1Parser.FeedResult {
    Array(text.utf8).withUnsafeBytes { parser.feed($0) }
}

final class WorkspacePoolTests: XCTestCase {
    func testReturnedWorkspaceIsLentAgainWithAParserThatForgotTheLastConnection() {
        let pool = WorkspacePool()
        let first = CountingDelegate()
        let workspace = pool.lend(to: first, limits: limits)
        // The first connection leaves in the middle of a head.
        XCTAssertEqual(feed(workspace.parser, "GET /a HTTP/1.1\r\nHost: a\r\nX-Half: "), .consumed)
        workspace.scratch.append("head written upstream")
        pool.takeBack(workspace)
        XCTAssertEqual(pool.spareCount, 1)

        let second = CountingDelegate()
        let again = pool.lend(to: second, limits: HeaderLimits(maxHeadBytes: 100, maxFieldCount: 5))
        XCTAssertTrue(again === workspace, "the spare workspace is reused")
        XCTAssertTrue(again.scratch.isEmpty)
        XCTAssertEqual(again.parser.limits.maxHeadBytes, 100)
        XCTAssertEqual(feed(again.parser, "GET /b HTTP/1.1\r\nHost: b\r\n\r\n"), .consumed)
        XCTAssertEqual(second.heads, 1)
        XCTAssertEqual(second.messages, 1)
        XCTAssertEqual(first.heads, 0, "the first connection hears nothing more")
        XCTAssertEqual(String(decoding: again.parser.head.target, as: UTF8.self), "/b")
    }

    func testBuffersThatGrewLargeAreFreedWhenTheWorkspaceComesBack() {
        let pool = WorkspacePool()
        // Kept in a local: the parser holds its delegate unowned.
        let delegate = CountingDelegate()
        let workspace = pool.lend(to: delegate, limits: limits)
        let large = [UInt8](repeating: 0x61, count: WorkspacePool.keptCapacity + 1)
        workspace.replayBody.append(large)
        workspace.scratch.append("small")
        pool.takeBack(workspace)

        XCTAssertEqual(workspace.replayBody.capacity, 0)
        XCTAssertGreaterThan(workspace.scratch.capacity, 0, "a small buffer keeps its storage for the next request")
    }

    func testThePoolKeepsAtMostMaxSpareWorkspaces() {
        let pool = WorkspacePool()
        let delegate = CountingDelegate()
        let lent = (0..<(WorkspacePool.maxSpare + 10)).map { _ in pool.lend(to: delegate, limits: limits) }
        XCTAssertEqual(pool.lentCount, WorkspacePool.maxSpare + 10)
        for workspace in lent { pool.takeBack(workspace) }
        XCTAssertEqual(pool.spareCount, WorkspacePool.maxSpare)
        XCTAssertEqual(pool.lentCount, 0)
    }
}
