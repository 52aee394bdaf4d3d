import Config
import Endpoints
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
        XCTAssertEqual(redis.topology, .server(RedisEndpoint(host: "10.0.0.7", user: "relay", password: Secret("pw/with@odd"))))
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

    func testRedissSentinelUsesTLSForTheSentinelsAndTheMaster() throws {
        let config = try decodeConfig(#"{ "store": { "redis": "rediss-sentinel://:hunter2-password@s1:26380,s2:26380/orders", "key": "\#(key)" } }"#)
        let redis = try XCTUnwrap(config.store?.redis)
        XCTAssertTrue(redis.topology.usesTLS)
        XCTAssertEqual(redis.tls, TLSSettings())
        XCTAssertEqual(redis.topology.description, "rediss-sentinel://:…@s1:26380,s2:26380/orders/0")
        guard case .sentinel(let sentinel) = redis.topology else { return XCTFail("not a sentinel URL: \(redis.topology)") }
        XCTAssertTrue(sentinel.master(host: "10.0.0.9", port: 6380).usesTLS)
        XCTAssertTrue(sentinel.sentinels[0].endpoint(usesTLS: sentinel.usesTLS).usesTLS)
        let refused = configErrors(#"{ "store": { "redis": "redis-sentinel://s1/orders", "key": "\#(key)", "tls": {} } }"#)
        XCTAssertEqual(describe(refused), ["$.store.tls: tls is set but store.redis is not a TLS URL: write rediss:// (rediss-cluster://, rediss-sentinel://) for TLS"])
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

    // MARK: - rediss:// and store.tls

    func testRedissUsesTLSWithTheDefaultSettings() throws {
        let config = try decodeConfig(#"{ "store": { "redis": "rediss://:hunter2-password@redis.example:6380", "key": "\#(key)" } }"#)
        let redis = try XCTUnwrap(config.store?.redis)
        XCTAssertTrue(redis.topology.usesTLS)
        XCTAssertEqual(redis.tls, TLSSettings())
        XCTAssertEqual(redis.topology.description, "rediss://:…@redis.example:6380/0")
        XCTAssertNil(try decodeConfig(#"{ "store": { "redis": "redis://redis", "key": "\#(key)" } }"#).store?.redis?.tls)
    }

    func testRedissClusterUsesTLSForEveryNode() throws {
        let config = try decodeConfig(#"{ "store": { "redis": "rediss-cluster://:hunter2-password@redis-0:6380,redis-1:6380", "key": "\#(key)" } }"#)
        let redis = try XCTUnwrap(config.store?.redis)
        XCTAssertTrue(redis.topology.usesTLS)
        XCTAssertEqual(redis.tls, TLSSettings())
        XCTAssertEqual(redis.topology.description, "rediss-cluster://:…@redis-0:6380,redis-1:6380")
        guard case .cluster(let seeds) = redis.topology else { return XCTFail("not a cluster: \(redis.topology)") }
        XCTAssertTrue(seeds.node(host: "10.0.0.9", port: 6380).usesTLS)
        XCTAssertFalse(try decodeConfig(#"{ "store": { "redis": "redis-cluster://redis-0", "key": "\#(key)" } }"#).store?.redis?.topology.usesTLS ?? true)
    }

    func testStoreTLSIsReadLikeAnUpstreamsAndItsFilesAreWatched() throws {
        let pin = "sha256/" + Data([UInt8](repeating: 1, count: 32)).base64EncodedString()
        let result = try decodeConfig(#"""
            { "store": { "redis": "rediss://redis.internal:6380", "key": "\#(key)",
                         "tls": { "caFile": "redis-ca.pem", "trust": "caFileOnly", "serverName": "Redis.Fleet.Example", "pins": ["\#(pin)"] } } }
            """#, besideFiles: ["redis-ca.pem": "a CA bundle"])
        let config = try result.get()
        let tls = try XCTUnwrap(config.store?.redis?.tls)
        XCTAssertTrue(tls.caFile?.hasSuffix("/redis-ca.pem") ?? false, String(describing: tls.caFile))
        XCTAssertEqual(tls.trust, .caFileOnly)
        XCTAssertEqual(tls.serverName, "redis.fleet.example")
        XCTAssertEqual(tls.pins, [pin])
        XCTAssertEqual(config.watchedFiles.map(\.key), ["$.store.tls.caFile"])
    }

    /// Each bad `store.tls` with its error: the route `tls` decoder's checks, and the store's own.
    func testStoreTLSRefusals() throws {
        let rediss = #""redis": "rediss://:hunter2-password@redis:6380", "key": "\#(key)""#
        let cases: [(store: String, errors: [String])] = [
            (#""redis": "redis://:hunter2-password@redis", "key": "\#(key)", "tls": {}"#,
             ["$.store.tls: tls is set but store.redis is not a TLS URL: write rediss:// (rediss-cluster://, rediss-sentinel://) for TLS"]),
            (#""redis": "redis-cluster://:hunter2-password@redis-0:6379,redis-1:6379", "key": "\#(key)", "tls": {}"#,
             ["$.store.tls: tls is set but store.redis is not a TLS URL: write rediss:// (rediss-cluster://, rediss-sentinel://) for TLS"]),
            (#""path": "/x", "key": "\#(key)", "tls": {}"#, [#"$.store.tls: only with "redis" (the shared store)"#]),
            (rediss + #", "tls": "on""#, ["$.store.tls: expected an object, got string"]),
            (rediss + #", "tls": { "verify": false }"#, [#"$.store.tls.verify: unknown key "verify""#]),
            (rediss + #", "tls": { "caFile": "missing.pem" }"#, ["$.store.tls.caFile: no such file: BASE/missing.pem"]),
            (rediss + #", "tls": { "trust": "caFileOnly" }"#,
             [#"$.store.tls.trust: "caFileOnly" needs caFile: the CA certificates to trust instead of the system store"#]),
            (rediss + #", "tls": { "trust": "everything" }"#,
             [#"$.store.tls.trust: must be "systemAndCaFile" or "caFileOnly", got "everything""#]),
            (rediss + #", "tls": { "serverName": "not a name" }"#, [#"$.store.tls.serverName: "not a name" is not a valid host name"#]),
            (rediss + #", "tls": { "pins": ["md5/abc"] }"#,
             [#"$.store.tls.pins[0]: expected "sha256/<base64 of the SPKI SHA-256 hash>", got "md5/abc""#]),
            (rediss + #", "tls": { "clientKey": "client.key" }"#, ["$.store.tls.clientCert: required when clientKey is set"]),
        ]
        for (store, expected) in cases {
            let directory = try TemporaryDirectory()
            defer { directory.remove() }
            try directory.write("client.key", "a key")
            let errors = describe(configErrors(#"{ "store": { \#(store) } }"#, baseDirectory: directory.path))
                .map { $0.replacingOccurrences(of: directory.path, with: "BASE") }
            XCTAssertEqual(errors, expected, store)
            XCTAssertFalse(errors.joined().contains("hunter2"))
        }
    }

    func testChangingStoreTLSTakesARestart() throws {
        func config(_ tls: String) throws -> RelayConfig {
            try decodeConfig(#"{ "store": { "redis": "rediss://redis:6380", "key": "\#(key)"\#(tls) } }"#)
        }
        XCTAssertEqual(try config("").restartOnlyChanges(to: try config("")), [])
        XCTAssertEqual(try config("").restartOnlyChanges(to: try config(#", "tls": { "serverName": "other.example" }"#)),
                       ["$.store.tls: changed; this takes a restart, not a reload"])
        XCTAssertEqual(try decodeConfig(#"{ "store": { "redis": "redis://redis:6380", "key": "\#(key)" } }"#).restartOnlyChanges(to: try config("")),
                       ["$.store.redis: changed from redis://redis:6380/0 to rediss://redis:6380/0; this takes a restart, not a reload"])
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

    /// A Redis timeout near the token wait leaves the first request's token request no time
    /// when Redis hangs: refused above half of `limits.tokenWaitSeconds`, naming both values; at
    /// the timeout when the file writes one, else (the default, 200 ms) at the token wait.
    func testARedisTimeoutAboveHalfTheTokenWaitIsRefused() throws {
        func document(_ timeout: Int?, tokenWait: String?) -> String {
            let timeoutMember = timeout.map { #", "timeoutMilliseconds": \#($0)"# } ?? ""
            let limits = tokenWait.map { #", "limits": { "tokenWaitSeconds": \#($0) }"# } ?? ""
            return #"{ "store": { "redis": "redis://r", "key": "\#(key)"\#(timeoutMember) }\#(limits) }"#
        }
        let advice = "a request waits at most that long for its token, and the token's fetch may first wait this long for a Redis "
            + "that does not answer; lower it (Redis answers within milliseconds) or raise limits.tokenWaitSeconds"
        let waitAdvice = "a request waits at most this long for its token, and the token's fetch may first wait that long for a Redis "
            + "that does not answer; raise it or lower store.timeoutMilliseconds"
        let table: [(timeout: Int?, tokenWait: String?, error: String?)] = [
            (15000, nil, nil),
            (15001, nil, "$.store.timeoutMilliseconds: 15001 ms is more than half of limits.tokenWaitSeconds (30 s): " + advice),
            (60000, nil, "$.store.timeoutMilliseconds: 60000 ms is more than half of limits.tokenWaitSeconds (30 s): " + advice),
            (5000, "5", "$.store.timeoutMilliseconds: 5000 ms is more than half of limits.tokenWaitSeconds (5 s): " + advice),
            (2500, "5", nil),
            (1000, "1.5", "$.store.timeoutMilliseconds: 1000 ms is more than half of limits.tokenWaitSeconds (1.5 s): " + advice),
            (750, "1.5", nil),
            // The default timeout beside a token wait the file lowers.
            (nil, nil, nil),
            (nil, "0.4", nil),
            (nil, "0.399", "$.limits.tokenWaitSeconds: 0.399 s is less than twice store.timeoutMilliseconds (200 ms, its default): " + waitAdvice),
            (nil, "0.1", "$.limits.tokenWaitSeconds: 0.1 s is less than twice store.timeoutMilliseconds (200 ms, its default): " + waitAdvice),
            (100, "0.1", "$.store.timeoutMilliseconds: 100 ms is more than half of limits.tokenWaitSeconds (0.1 s): " + advice),
            (50, "0.1", nil),
        ]
        for row in table {
            let text = document(row.timeout, tokenWait: row.tokenWait)
            if let error = row.error {
                XCTAssertEqual(describe(configErrors(text)), [error], "\(row.timeout.map { "\($0) ms" } ?? "default"), wait \(row.tokenWait ?? "default")")
            } else {
                let config = try decodeConfig(text)
                XCTAssertEqual(config.store?.redis?.timeoutMilliseconds, row.timeout ?? 200)
            }
        }
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

    // MARK: - store.username, store.passwordFile

    func testAnACLUserAndAPasswordFileReadAndTrimmed() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write("redis-password", "acl-password-1\n")
        let config = try decodeConfig(#"{ "store": { "redis": "redis://redis:6379/0", "key": "\#(key)", "username": "relay", "passwordFile": "redis-password" } }"#,
                                      baseDirectory: directory.path)
        let redis = try XCTUnwrap(config.store?.redis)
        XCTAssertEqual(redis.topology.user, "relay")
        XCTAssertEqual(redis.topology.password, Secret("acl-password-1"))
        XCTAssertEqual(redis.passwordFile, directory.path + "/redis-password")
        XCTAssertEqual(redis.topology.description, "redis://relay:…@redis:6379/0")
    }

    func testAUserBesideTheURLsPasswordOfTheDefaultUser() throws {
        let config = try decodeConfig(#"{ "store": { "redis": "redis://:url-password@redis", "key": "\#(key)", "username": "relay" } }"#)
        XCTAssertEqual(config.store?.redis?.topology.user, "relay")
        XCTAssertEqual(config.store?.redis?.topology.password, Secret("url-password"))
    }

    /// Each bad combination or value, and the exact error with its JSON path; none quotes a password.
    func testUsernameAndPasswordFileRefusals() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write("password", "file-password\n")
        try directory.write("empty", " \n")
        try directory.write("big", String(repeating: "x", count: 1024 * 1024 + 1))
        let cases: [(store: String, error: String)] = [
            (#""redis": "redis://:url-password@r", "passwordFile": "password""#,
             "$.store.passwordFile: the store.redis URL holds a password too: set the password in one place only"),
            (#""redis": "redis://someone:url-password@r", "username": "relay""#,
             "$.store.username: the store.redis URL names a user too: set the user in one place only"),
            (#""redis": "redis://someone:url-password@r", "username": "relay", "passwordFile": "password""#,
             "$.store.username: the store.redis URL names a user too: set the user in one place only"),
            (#""redis": "redis://r", "username": "relay""#,
             #"$.store.username: an ACL user needs a password: "passwordFile", or the password in the store.redis URL"#),
            (#""redis": "redis://r", "username": """#, "$.store.username: must not be empty"),
            (#""redis": "redis://r", "username": 7"#, "$.store.username: expected a string, got number"),
            (#""redis": "redis://r", "passwordFile": "missing""#, "$.store.passwordFile: no such file: \(directory.path)/missing"),
            (#""redis": "redis://r", "passwordFile": "empty""#, "$.store.passwordFile: file is empty: \(directory.path)/empty"),
            (#""redis": "redis://r", "passwordFile": "big""#,
             "$.store.passwordFile: cannot read file (larger than 1048576 bytes): \(directory.path)/big"),
            (#""path": "/x", "username": "relay", "passwordFile": "password""#,
             #"$.store.username: only with "redis" (the shared store)"#),
        ]
        for (store, expected) in cases {
            let errors = describe(configErrors(#"{ "store": { "key": "\#(key)", \#(store) } }"#, baseDirectory: directory.path))
            XCTAssertEqual(errors.first, expected, store)
            XCTAssertFalse(errors.joined().contains("password-"), store)
        }
        XCTAssertEqual(describe(configErrors(#"{ "store": { "path": "/x", "key": "\#(key)", "username": "relay", "passwordFile": "password" } }"#,
                                             baseDirectory: directory.path)),
                       [#"$.store.username: only with "redis" (the shared store)"#, #"$.store.passwordFile: only with "redis" (the shared store)"#])
    }

    func testAPasswordFilesNewContentTakesNoRestartButAnotherFileDoes() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        func config(_ file: String) throws -> RelayConfig {
            try decodeConfig(#"{ "store": { "redis": "redis://r", "key": "\#(key)", "username": "relay", "passwordFile": "\#(file)" } }"#,
                             baseDirectory: directory.path)
        }
        try directory.write("a", "first-password")
        let before = try config("a")
        try directory.write("a", "second-password")
        XCTAssertEqual(before.restartOnlyChanges(to: try config("a")), [])
        try directory.write("b", "second-password")
        XCTAssertEqual(before.restartOnlyChanges(to: try config("b")),
                       ["$.store.passwordFile: changed from \(directory.path)/a to \(directory.path)/b; this takes a restart, not a reload"])
    }

    // MARK: - store.redis as a Redis Cluster

    func testAClusterURLNamesItsSeedNodes() throws {
        let config = try decodeConfig(#"{ "store": { "redis": "redis-cluster://relay:pw@10.0.0.7:7000,10.0.0.8:7001", "key": "\#(key)" } }"#)
        guard case .cluster(let seeds) = try XCTUnwrap(config.store?.redis).topology else { return XCTFail("not a cluster") }
        XCTAssertEqual(seeds.description, "redis-cluster://relay:…@10.0.0.7:7000,10.0.0.8:7001")
    }

    /// Each bad cluster URL (or prefix beside one) -> the exact error, at its path, never quoting the URL.
    func testBadClusterSettingsAreRefused() {
        let cases: [(redis: String, prefix: String?, error: String)] = [
            ("redis-cluster://:hunter2-password@a:7000,b:7001/1", nil,
             "$.store.redis: a Redis Cluster has database 0 only: leave the path out (or write /0)"),
            ("redis-cluster://:hunter2-password@a:7000,,b:7001", nil,
             "$.store.redis: the list of nodes has an empty entry (write host:port,host:port)"),
            ("redis-cluster://:hunter2-password@a:70000", nil, "$.store.redis: the port is not a number from 1 to 65535"),
            ("redis-cluster://:hunter2-password@a:7000?x=1", nil,
             "$.store.redis: a query (?…) or fragment (#…) is not allowed in a redis-cluster:// URL"),
            ("redis-cluster://hunter2-password@a:7000", nil,
             "$.store.redis: the user info needs a colon: write user:password@ (Redis 6 ACL user) or :password@ (the default user)"),
            ("redis-cluster://:hunter2-password@", nil, "$.store.redis: the URL has no host"),
            ("redis-cluster://" + Array(repeating: "a:7000", count: 17).joined(separator: ","), nil,
             "$.store.redis: more than 16 seed nodes (a few are enough: the others are found in the slot map)"),
            ("redis-cluster://:hunter2-password@a:7000", "fleet{1}:",
             #"$.store.keyPrefix: must not hold "{" or "}" with a redis-cluster:// store (the relay's keys use them as hash tags)"#),
        ]
        for (redis, prefix, error) in cases {
            let prefixMember = prefix.map { #", "keyPrefix": "\#($0)""# } ?? ""
            let errors = describe(configErrors(#"{ "store": { "redis": "\#(redis)", "key": "\#(key)"\#(prefixMember) } }"#))
            XCTAssertEqual(errors, [error], redis)
            XCTAssertFalse(errors.joined().contains("hunter2"))
        }
    }

    func testBracesInThePrefixAreFineWithOneServer() throws {
        let config = try decodeConfig(#"{ "store": { "redis": "redis://r", "key": "\#(key)", "keyPrefix": "fleet{1}:" } }"#)
        XCTAssertEqual(config.store?.redis?.keyPrefix, "fleet{1}:")
    }

    func testMovingToAClusterTakesARestart() throws {
        let before = try decodeConfig(#"{ "store": { "redis": "redis://:pw@r:7000", "key": "\#(key)" } }"#)
        let after = try decodeConfig(#"{ "store": { "redis": "redis-cluster://:pw@r:7000", "key": "\#(key)" } }"#)
        XCTAssertEqual(before.restartOnlyChanges(to: after),
                       ["$.store.redis: changed from redis://:…@r:7000/0 to redis-cluster://:…@r:7000; this takes a restart, not a reload"])
    }
}
