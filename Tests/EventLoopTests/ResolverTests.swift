@testable import EventLoop
import LoopTestSupport
import XCTest

final class ResolverTests: XCTestCase {
    func testLocalhostResolvesToLoopbackAddresses() throws {
        let test = try LeakCheckedLoop()
        var result: Result<[SocketAddress], UVError>?
        Resolver.resolve(on: test.loop, host: "localhost", port: 8080) { result = $0 }
        test.run(until: "localhost resolved") { result != nil }

        let addresses = try XCTUnwrap(result).get()
        XCTAssertFalse(addresses.isEmpty)
        for address in addresses {
            XCTAssertTrue(address.ipString.hasPrefix("127.") || address.ipString == "::1", "\(address) is not loopback")
            XCTAssertEqual(address.port, 8080)
        }
        test.closeAndCheckForLeaks()
    }

    func testIPLiteralIsAnsweredAtOnceWithoutTheThreadPool() throws {
        let test = try LeakCheckedLoop()
        var results: [Result<[SocketAddress], UVError>] = []
        Resolver.resolve(on: test.loop, host: "127.0.0.1", port: 8080) { results.append($0) }
        Resolver.resolve(on: test.loop, host: "::1", port: 8080) { results.append($0) }

        // Answered inside `resolve`: the loop has not run, and no request is pending on it.
        let expected = try ["127.0.0.1", "::1"].map { [try XCTUnwrap(SocketAddress(ip: $0, port: 8080))] }
        XCTAssertEqual(try results.map { try $0.get() }, expected)
        XCTAssertEqual(test.loop.openHandles, 0)
        test.closeAndCheckForLeaks()
    }

    /// libuv refuses a name longer than it converts (255 bytes) inside `uv_getaddrinfo`: the
    /// failure still arrives from the loop, after `resolve` returned, as any other failure does.
    func testANameLibuvRefusesAtOnceFailsOnTheNextLoopTurn() throws {
        let test = try LeakCheckedLoop()
        var result: Result<[SocketAddress], UVError>?
        Resolver.resolve(on: test.loop, host: String(repeating: "a", count: 300) + ".example", port: 8080) { result = $0 }
        XCTAssertNil(result, "reported inside resolve")
        test.run(until: "the failure reported") { result != nil }
        XCTAssertThrowsError(try XCTUnwrap(result).get())
        test.closeAndCheckForLeaks()
    }
}
