import RedisProtocol
import SafeText
import XCTest

/// `store.redis` as one server or as sentinels naming a master: what each names, and errors that
/// never show the password.
final class RedisTopologyTests: XCTestCase {
    private func failure(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> String {
        do {
            let topology = try RedisTopology(parsing: text)
            XCTFail("parsed \(topology)", file: file, line: line)
            return ""
        } catch {
            return error.description
        }
    }

    func testARedisURLIsOneServer() throws {
        XCTAssertEqual(try RedisTopology(parsing: "redis://r:6380/1"), .server(RedisEndpoint(host: "r", port: 6380, database: 1)))
    }

    func testASentinelURLNamesEverySentinelInOrderWithTheDefaultPort() throws {
        let topology = try RedisTopology(parsing: "REDIS-SENTINEL://S1.Example:26380,[::1],10.0.0.3/orders-cache")
        XCTAssertEqual(topology, .sentinel(SentinelTopology(
            sentinels: [SentinelAddress(host: "s1.example", port: 26380), SentinelAddress(host: "::1"), SentinelAddress(host: "10.0.0.3")],
            masterName: "orders-cache")))
        XCTAssertEqual(topology.description, "redis-sentinel://s1.example:26380,[::1]:26379,10.0.0.3:26379/orders-cache/0")
    }

    func testTheCredentialsAndDatabaseAreTheMastersAndTheSentinelsAreAskedWithout() throws {
        guard case .sentinel(let sentinel) = try RedisTopology(parsing: "redis-sentinel://relay:p%40ss@s1/m_1.a/4") else {
            return XCTFail("a sentinel topology")
        }
        XCTAssertEqual(sentinel.user, "relay")
        XCTAssertEqual(sentinel.password, Secret("p@ss"))
        XCTAssertEqual(sentinel.master(host: "10.1.1.1", port: 6390),
                       RedisEndpoint(host: "10.1.1.1", port: 6390, database: 4, user: "relay", password: Secret("p@ss")))
        XCTAssertEqual(sentinel.sentinels[0].endpoint(usesTLS: false), RedisEndpoint(host: "s1", port: 26379))
        XCTAssertNil(sentinel.sentinels[0].endpoint(usesTLS: false).password)
    }

    func testTheDescriptionHidesThePassword() throws {
        let topology = try RedisTopology(parsing: "redis-sentinel://:very-secret-password@s1/m")
        XCTAssertEqual(topology.description, "redis-sentinel://:…@s1:26379/m/0")
        var dumped = ""
        dump(topology, to: &dumped)
        XCTAssertFalse(dumped.contains("very-secret"))
        XCTAssertFalse(String(reflecting: topology).contains("very-secret"))
    }

    /// Every refusal, exactly; none quotes the URL or its password.
    func testBadSentinelURLsAreRefusedWithoutQuotingThem() {
        let cases: [(String, String)] = [
            ("redis-sentinel://:hunter2@s1:26379", "the master's name is missing (redis-sentinel://host:port[,host:port…]/mastername[/db])"),
            ("redis-sentinel://:hunter2@s1,/m", "an empty sentinel address between commas"),
            ("redis-sentinel://:hunter2@/m", "the URL names no sentinel (host:port[,host:port…])"),
            ("redis-sentinel://:hunter2@s1:99999/m", "the port is not a number from 1 to 65535"),
            ("redis-sentinel://:hunter2@S1,s1:26379/m", "a sentinel address is listed twice"),
            ("redis-sentinel://:hunter2@s1/m*", "the master's name must be 1 to 128 letters, digits, \".\", \"_\" or \"-\""),
            ("redis-sentinel://:hunter2@s1/" + String(repeating: "m", count: 129), "the master's name must be 1 to 128 letters, digits, \".\", \"_\" or \"-\""),
            ("redis-sentinel://:hunter2@s1/m/-1", "the path must be a database number (/0, /1, …)"),
            ("redis-sentinel://:hunter2@s1/m#f", "a query (?…) or fragment (#…) is not allowed in a redis-sentinel:// URL"),
            ("redis-sentinel://:hunter2@s1/m@x", "a \"/\" or \"@\" in the user or password must be percent-encoded (%2F, %40)"),
            ("redis-sentinel://relay:@s1/m", "the password in the URL is empty"),
            ("redis-sentinel://:hunter2@[::1/m", "unclosed \"[\" in the host"),
        ]
        for (text, expected) in cases {
            XCTAssertEqual(failure(text), expected, text)
        }
        XCTAssertEqual(failure("sentinel://s1/m"), "unsupported scheme \"sentinel\" (expected redis://, rediss://, redis-cluster:// or redis-sentinel://; Unix sockets are not supported)")
    }
}
