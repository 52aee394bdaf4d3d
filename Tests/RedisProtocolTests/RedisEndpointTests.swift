import OAuth2
import RedisProtocol
import SafeText
import XCTest

/// `store.redis` URLs: what they name, and errors that never show the password.
final class RedisEndpointTests: XCTestCase {
    private func parse(_ text: String) throws -> RedisEndpoint {
        try RedisEndpoint(parsing: text)
    }

    private func failure(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> String {
        do {
            let endpoint = try RedisEndpoint(parsing: text)
            XCTFail("parsed \(endpoint)", file: file, line: line)
            return ""
        } catch {
            return error.description
        }
    }

    func testAHostAloneIsPort6379DatabaseZeroWithoutAuth() throws {
        XCTAssertEqual(try parse("redis://redis.fleet.svc"), RedisEndpoint(host: "redis.fleet.svc", port: 6379, database: 0))
        XCTAssertEqual(try parse("redis://127.0.0.1:6380/"), RedisEndpoint(host: "127.0.0.1", port: 6380))
    }

    func testPortAndDatabase() throws {
        let endpoint = try parse("REDIS://Cache.Example:7000/12")
        XCTAssertEqual(endpoint, RedisEndpoint(host: "cache.example", port: 7000, database: 12))
    }

    func testAnIPv6HostIsBracketed() throws {
        XCTAssertEqual(try parse("redis://[::1]:6390/1"), RedisEndpoint(host: "::1", port: 6390, database: 1))
        XCTAssertEqual(try parse("redis://[::1]:6390/1").description, "redis://[::1]:6390/1")
    }

    func testAPasswordAloneIsTheDefaultUser() throws {
        let endpoint = try parse("redis://:s3cret@127.0.0.1:6379/0")
        XCTAssertNil(endpoint.user)
        XCTAssertEqual(endpoint.password?.value, "s3cret")
    }

    func testAUserAndPasswordAreTheRedis6ACLForm() throws {
        let endpoint = try parse("redis://relay:s3cret@127.0.0.1/2")
        XCTAssertEqual(endpoint.user, "relay")
        XCTAssertEqual(endpoint.password?.value, "s3cret")
        XCTAssertEqual(endpoint.database, 2)
    }

    func testUserAndPasswordArePercentDecoded() throws {
        let endpoint = try parse("redis://r%40lay:p%40ss%3Aw%2Ford%25@redis:6379")
        XCTAssertEqual(endpoint.user, "r@lay")
        XCTAssertEqual(endpoint.password?.value, "p@ss:w/ord%")
    }

    func testTheDescriptionHidesThePassword() throws {
        let endpoint = try parse("redis://relay:very-secret-password@redis:6379/3")
        XCTAssertEqual(endpoint.description, "redis://relay:…@redis:6379/3")
        XCTAssertEqual(try parse("redis://:very-secret-password@redis").description, "redis://:…@redis:6379/0")
        XCTAssertFalse(String(reflecting: endpoint).contains("very-secret"))
        var dumped = ""
        dump(endpoint, to: &dumped)
        XCTAssertFalse(dumped.contains("very-secret"))
    }

    func testRedissIsTheSameEndpointOverTLS() throws {
        let endpoint = try parse("rediss://relay:very-secret-password@Redis.Example:6380/2")
        XCTAssertEqual(endpoint, RedisEndpoint(host: "redis.example", port: 6380, database: 2, user: "relay",
                                               password: Secret("very-secret-password"), usesTLS: true))
        XCTAssertEqual(endpoint.description, "rediss://relay:…@redis.example:6380/2")
        XCTAssertEqual(try parse("REDISS://redis").description, "rediss://redis:6379/0")
        XCTAssertFalse(try parse("redis://redis").usesTLS)
    }

    func testOtherSchemesAreRefused() {
        XCTAssertTrue(failure("http://redis:6379").contains("unsupported scheme \"http\""))
        XCTAssertTrue(failure("unix:///run/redis.sock").contains("Unix sockets"))
        XCTAssertTrue(failure("redis-sentinel://a:26379").contains("unsupported scheme"))
        XCTAssertTrue(failure("redis:6379").contains("not a redis:// URL"))
    }

    func testBadPartsAreRefusedWithoutQuotingTheURL() {
        let cases: [(String, String)] = [
            ("redis://:hunter2-secret@", "no host"),
            ("redis://:hunter2-secret@redis:0", "port"),
            ("redis://:hunter2-secret@redis:70000", "port"),
            ("redis://:hunter2-secret@redis:6a79", "port"),
            ("redis://:hunter2-secret@redis:6379/x", "database number"),
            ("redis://:hunter2-secret@redis:6379/-1", "database number"),
            ("redis://:hunter2-secret@redis:6379/0/1", "database number"),
            ("redis://:hunter2-secret@redis:6379/0?timeout=1", "query"),
            ("redis://hunter2-secret@redis", "needs a colon"),
            ("redis://relay:@redis", "password in the URL is empty"),
            ("redis://:hunter2%zz@redis", "two hex digits"),
            ("redis://:hunter2%ff@redis", "not UTF-8"),
            ("redis://:hunter2-secret@[::1", "unclosed"),
            ("redis://:hunter2-secret@[nothex]:1", "not an IPv6"),
            ("redis://:hunter2-secret@red is", "not a valid host"),
        ]
        for (text, expected) in cases {
            let message = failure(text)
            XCTAssertTrue(message.contains(expected), "\(expected) not in \(message)")
            XCTAssertFalse(message.contains("hunter2"), "the password shows in \(message)")
        }
    }

    func testAnUnencodedAtSignInThePasswordIsNoHost() {
        // The last "@" ends the user info, so "p@ss" splits wrongly and the host is refused,
        // with a hint, instead of connecting somewhere unexpected.
        XCTAssertTrue(failure("redis://:p@ss/word@redis").contains("percent-encoded"))
    }
}
