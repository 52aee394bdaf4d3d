import Config
import FileTestSupport
import Foundation
import OAuth2
import RedisProtocol
import SafeText
import XCTest

/// `store`: a directory and a 32-byte key (inline, `${ENV}` or a file), errors with JSON paths
/// that never quote the key.
final class StoreConfigTests: XCTestCase {
    private let key = Data([UInt8](repeating: 7, count: 32)).base64EncodedString()

    func testWithoutStoreTokensStayInMemory() throws {
        XCTAssertNil(try decodeConfig("{}").store)
    }

    func testAPathAndAnInlineOrEnvironmentKey() throws {
        let config = try decodeConfig(#"{ "store": { "path": "state/tokens", "key": "${STORE_KEY}" } }"#,
                                      environment: ["STORE_KEY": key], baseDirectory: "/etc/relay")
        XCTAssertEqual(config.store, StoreConfig(path: "/etc/relay/state/tokens", key: Secret(key)))
    }

    func testAKeyFileIsReadAndTrimmed() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write("store.key", key + "\n")
        let config = try decodeConfig(#"{ "store": { "path": "/var/lib/relay", "keyFile": "store.key" } }"#, baseDirectory: directory.path)
        XCTAssertEqual(config.store?.key, Secret(key))
    }

    func testAKeyOfAnotherLengthIsAnErrorThatDoesNotQuoteIt() {
        let short = Data([UInt8](repeating: 9, count: 16)).base64EncodedString()
        let errors = describe(configErrors(#"{ "store": { "path": "/x", "key": "\#(short)" } }"#))
        XCTAssertEqual(errors, ["$.store.key: the key decodes to 16 bytes, not 32 (create one with `openssl rand -base64 32`)"])
        XCTAssertFalse(errors.joined().contains(short))
        XCTAssertEqual(describe(configErrors(#"{ "store": { "path": "/x", "key": "not*base64" } }"#)),
                       ["$.store.key: the key is not base64 (create one with `openssl rand -base64 32`)"])
    }

    func testPathAndKeyAreRequiredAndKeyIsGivenOnce() {
        XCTAssertEqual(describe(configErrors(#"{ "store": { "key": "\#(key)" } }"#)),
                       [#"$.store.path: required: "path" (a directory), "redis" (a redis:// URL shared by replicas), or both"#])
        XCTAssertEqual(describe(configErrors(#"{ "store": { "path": "/x" } }"#)).map { $0.prefix(25) }, ["$.store.key: required: \"k"])
        XCTAssertEqual(describe(configErrors(#"{ "store": { "path": "/x", "key": "\#(key)", "keyFile": "k" } }"#)),
                       ["$.store.keyFile: set either key or keyFile, not both"])
        XCTAssertEqual(describe(configErrors(#"{ "store": { "path": "/x", "key": "\#(key)", "redis": "r" } }"#)).count, 1)
    }

    func testMovingTheStoreTakesARestartButAnotherKeyIsAReload() throws {
        let other = Data([UInt8](repeating: 8, count: 32)).base64EncodedString()
        func config(_ path: String, _ key: String) throws -> RelayConfig {
            try decodeConfig(#"{ "store": { "path": "\#(path)", "key": "\#(key)" } }"#)
        }
        XCTAssertEqual(try config("/a", key).restartOnlyChanges(to: try config("/a", key)), [])
        XCTAssertEqual(try config("/a", key).restartOnlyChanges(to: try config("/b", key)),
                       ["$.store.path: changed from /a to /b; this takes a restart, not a reload"])
        // A rotated key is put in force by the reload (StoreKeys): the previous one still reads.
        XCTAssertEqual(try config("/a", key).restartOnlyChanges(to: try config("/a", other)), [])
        XCTAssertEqual(try decodeConfig("{}").restartOnlyChanges(to: try config("/a", key)),
                       ["$.store.path: changed from none to /a; this takes a restart, not a reload"])
    }

    // MARK: - store.redis

    func testRedisAloneWithItsDefaults() throws {
        let config = try decodeConfig(#"{ "store": { "redis": "redis://redis.fleet:6379/2", "key": "\#(key)" } }"#)
        XCTAssertEqual(config.store, StoreConfig(path: nil, key: Secret(key),
                                                 redis: RedisStoreConfig(endpoint: RedisEndpoint(host: "redis.fleet", database: 2))))
        XCTAssertEqual(config.store?.redis?.keyPrefix, "oauth-relay:")
        XCTAssertEqual(config.store?.redis?.timeoutMilliseconds, 200)
    }

    func testRedisBesideAPathWithItsOwnPrefixAndTimeout() throws {
        let config = try decodeConfig(#"""
            { "store": { "path": "/var/lib/relay", "redis": "redis://relay:${REDIS_PASSWORD}@10.0.0.7", "key": "\#(key)",
                         "keyPrefix": "orders-fleet:", "timeoutMilliseconds": 50 } }
            """#, environment: ["REDIS_PASSWORD": "pw%2Fwith%40odd"])
        XCTAssertEqual(config.store?.path, "/var/lib/relay")
        let redis = try XCTUnwrap(config.store?.redis)
        XCTAssertEqual(redis.keyPrefix, "orders-fleet:")
        XCTAssertEqual(redis.timeoutMilliseconds, 50)
        guard case .server(let endpoint) = redis.topology else { return XCTFail("a redis:// URL names one server") }
        XCTAssertEqual(endpoint.user, "relay")
        XCTAssertEqual(endpoint.password, Secret("pw/with@odd"))
    }

    func testARedisSentinelURLNamesTheSentinelsAndTheMaster() throws {
        let config = try decodeConfig(#"""
            { "store": { "redis": "redis-sentinel://relay:${REDIS_PASSWORD}@10.0.0.7:26379,10.0.0.8/orders/3", "key": "\#(key)" } }
            """#, environment: ["REDIS_PASSWORD": "pw"])
        let sentinel = SentinelTopology(sentinels: [SentinelAddress(host: "10.0.0.7"), SentinelAddress(host: "10.0.0.8")],
                                        masterName: "orders", database: 3, user: "relay", password: Secret("pw"))
        XCTAssertEqual(config.store?.redis?.topology, .sentinel(sentinel))
        XCTAssertEqual(config.store?.redis?.topology.description, "redis-sentinel://relay:…@10.0.0.7:26379,10.0.0.8:26379/orders/3")
    }

    /// Every way a redis-sentinel:// value is refused: the error at `$.store.redis`, never the password.
    func testABadRedisSentinelURLIsRefusedWithoutQuotingIt() {
        let cases: [(String, String)] = [
            ("redis-sentinel://:hunter2@s1:26379", "the master's name is missing (redis-sentinel://host:port[,host:port…]/mastername[/db])"),
            ("redis-sentinel://:hunter2@s1:26379/", "the master's name is missing (redis-sentinel://host:port[,host:port…]/mastername[/db])"),
            ("redis-sentinel://:hunter2@s1,,s2/m", "an empty sentinel address between commas"),
            ("redis-sentinel://:hunter2@/m", "the URL names no sentinel (host:port[,host:port…])"),
            ("redis-sentinel://:hunter2@s1:0/m", "the port is not a number from 1 to 65535"),
            ("redis-sentinel://:hunter2@s1,s1:26379/m", "a sentinel address is listed twice"),
            ("redis-sentinel://:hunter2@s1/my%20master", "the master's name must be 1 to 128 letters, digits, \".\", \"_\" or \"-\""),
            ("redis-sentinel://:hunter2@s1/m/x", "the path must be a database number (/0, /1, …)"),
            ("redis-sentinel://:hunter2@s1/m/0/1", "the path must be a database number (/0, /1, …)"),
            ("redis-sentinel://:hunter2@s1/m?x=1", "a query (?…) or fragment (#…) is not allowed in a redis-sentinel:// URL"),
            ("redis-sentinel://hunter2@s1/m", "the user info needs a colon: write user:password@ (Redis 6 ACL user) or :password@ (the default user)"),
            ("redis-sentinel://:hunter2@s 1/m", "the host is not a valid host name or address (a password with \"@\" or \"/\" must be percent-encoded)"),
        ]
        for (url, expected) in cases {
            let errors = describe(configErrors(#"{ "store": { "redis": "\#(url)", "key": "\#(key)" } }"#))
            XCTAssertEqual(errors, ["$.store.redis: \(expected)"], url)
            XCTAssertFalse(errors.joined().contains("hunter2"))
        }
    }

    func testRedissAndTLSAreRefusedBecauseThisHiredisHasNoTLS() {
        let errors = describe(configErrors(#"""
            { "store": { "redis": "rediss://:hunter2-password@redis:6380", "key": "\#(key)", "tls": { "caFile": "ca.pem" } } }
            """#))
        XCTAssertEqual(errors.count, 2)
        XCTAssertTrue(errors[0].hasPrefix("$.store.redis: Redis over TLS (rediss://) is not supported: this relay's hiredis (0.14) has no TLS"), errors[0])
        XCTAssertTrue(errors[1].hasPrefix("$.store.tls: Redis over TLS"), errors[1])
        XCTAssertFalse(errors.joined().contains("hunter2"))
    }

    func testABadRedisURLIsAnErrorThatDoesNotQuoteIt() {
        let errors = describe(configErrors(#"{ "store": { "redis": "redis://:hunter2-password@redis:99999", "key": "\#(key)" } }"#))
        XCTAssertEqual(errors, ["$.store.redis: the port is not a number from 1 to 65535"])
        let fromEnvironment = describe(configErrors(#"{ "store": { "redis": "${REDIS_URL}", "key": "\#(key)" } }"#,
                                                    environment: ["REDIS_URL": "redis://:hunter2-password@"]))
        XCTAssertEqual(fromEnvironment, ["$.store.redis: the URL has no host"])
    }

    func testPrefixAndTimeoutAreCheckedAndNeedRedis() {
        XCTAssertEqual(describe(configErrors(#"{ "store": { "path": "/x", "key": "\#(key)", "keyPrefix": "a:", "timeoutMilliseconds": 10 } }"#)),
                       [#"$.store.keyPrefix: only with "redis" (the shared store)"#, #"$.store.timeoutMilliseconds: only with "redis" (the shared store)"#])
        XCTAssertEqual(describe(configErrors(#"{ "store": { "redis": "redis://r", "key": "\#(key)", "keyPrefix": "a b" } }"#)),
                       ["$.store.keyPrefix: must be at most 100 printable ASCII characters without spaces"])
        XCTAssertEqual(describe(configErrors(#"{ "store": { "redis": "redis://r", "key": "\#(key)", "timeoutMilliseconds": 0 } }"#)),
                       ["$.store.timeoutMilliseconds: must be milliseconds from 1 to 60000, got 0"])
    }

    func testChangingTheSharedStoreTakesARestartAndTheMessageHoldsNoPassword() throws {
        func config(_ url: String, prefix: String = "oauth-relay:", timeout: Int = 200) throws -> RelayConfig {
            try decodeConfig(#"{ "store": { "redis": "\#(url)", "key": "\#(key)", "keyPrefix": "\#(prefix)", "timeoutMilliseconds": \#(timeout) } }"#)
        }
        let before = try config("redis://:first-password@r/0")
        XCTAssertEqual(before.restartOnlyChanges(to: try config("redis://:first-password@r/0")), [])
        XCTAssertEqual(before.restartOnlyChanges(to: try config("redis://:second-password@r/0")),
                       ["$.store.redis: its password changed; this takes a restart, not a reload"])
        XCTAssertEqual(before.restartOnlyChanges(to: try config("redis://:first-password@r/1", prefix: "b:", timeout: 50)), [
            "$.store.redis: changed from redis://:…@r:6379/0 to redis://:…@r:6379/1; this takes a restart, not a reload",
            "$.store.keyPrefix: changed from oauth-relay: to b:; this takes a restart, not a reload",
            "$.store.timeoutMilliseconds: changed from 200 to 50; this takes a restart, not a reload",
        ])
        XCTAssertEqual(before.restartOnlyChanges(to: try config("redis-sentinel://:first-password@s1,s2/m")), [
            "$.store.redis: changed from redis://:…@r:6379/0 to redis-sentinel://:…@s1:26379,s2:26379/m/0; this takes a restart, not a reload",
        ])
        let sentinel = try config("redis-sentinel://:first-password@s1,s2/m")
        XCTAssertEqual(sentinel.restartOnlyChanges(to: try config("redis-sentinel://:second-password@s1,s2/m")),
                       ["$.store.redis: its password changed; this takes a restart, not a reload"])
    }
}
