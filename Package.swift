// swift-tools-version:6.0
import PackageDescription

/// Release builds skip Swift's run-time exclusivity checks: on the request path they cost about
/// 40% of the relay's own instructions (measured with callgrind). Debug builds, and so the unit
/// tests, keep them, and any overlapping access they would catch shows there.
let hotPath: [SwiftSetting] = [.unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release))]

/// The git commit the binary is built from, which `--version`, `GET /version` and the start-up log
/// line name. The build sets it in the environment: the Makefile (`git rev-parse HEAD`) for
/// `make build`, `make run` and `make dist`, Docker/Dockerfile from its `OAUTH_RELAY_COMMIT` build
/// argument (the build context has no .git). A plain `swift build` has none, and the binary says
/// "unknown". A value that is not 7 to 64 lower-case hex digits is ignored the same way: it becomes
/// a C string literal, so nothing else may reach it.
///
/// Why an environment variable read here, into one C file's define (Sources/CRelayBuild): it needs
/// no generated source file (a plain `swift build` has nothing to fail on), no plugin (a build plugin
/// sees no .git in a container either, and runs on every build) and no git in the manifest. SwiftPM
/// evaluates the manifest again when the environment changes (its manifest cache is keyed on it), and
/// a changed define recompiles that one C file and relinks the binary: no Swift module is
/// recompiled, because a C target's defines never reach the Swift modules importing its header.
/// tests/dist/test_build_commit.py (make test-dist) proves both on the Makefile's binaries.
let buildCommit: String = {
    let value = Context.environment["OAUTH_RELAY_COMMIT"] ?? ""
    let hex = value.utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0) }
    return (7...64).contains(value.utf8.count) && hex ? value : "unknown"
}()

let package = Package(
    name: "oauth-relay",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "oauth-relay", targets: ["OAuthRelay"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.1.0"),
    ],
    targets: [
        // C libraries, each behind exactly one Swift module that imports it `internal`, except
        // OpenSSL: one library (libssl on libcrypto) behind one module map, imported `internal` by
        // two Swift modules, Crypto (the primitives) and TLS (the engine), so that what only signs,
        // hashes or encrypts does not link the TLS engine. They share OpenSSL's per-thread error
        // queue, which Crypto owns (`OpenSSLErrors`, `package`) and TLS reads.
        .systemLibrary(name: "CLibUV", pkgConfig: "libuv", providers: [.apt(["libuv1-dev"])]),
        .systemLibrary(name: "CLLHTTP", pkgConfig: "libllhttp", providers: [.apt(["libllhttp-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        // The git commit the binary is built from (`buildCommit` above), for the executable only.
        .target(name: "CRelayBuild", cSettings: [.define("OAUTH_RELAY_BUILD_COMMIT", to: "\"\(buildCommit)\"")]),

        .target(name: "ByteBuffers", swiftSettings: hotPath),
        // Text the relay shows or embeds safely: a `Secret` prints redacted, any credential is shown
        // by one rule (`redacted`), JSON string literals are quoted by one writer. No dependency.
        .target(name: "SafeText", swiftSettings: hotPath),
        .target(name: "HTTPFields", dependencies: ["SafeText"], swiftSettings: hotPath),
        .target(name: "Locking", swiftSettings: hotPath),
        // Which of the files a configuration names changed (`FileIdentity`: device, inode, mtime,
        // size, symlink target), decided with no timer and no reading of content.
        .target(name: "WatchedFiles"),
        // The one JSON reader (strict RFC 8259, offsets for the config's errors) and writer, so
        // that no module needs Foundation's JSONSerialization. JSONText (string quoting) from HTTPFields.
        .target(name: "JSON", dependencies: ["SafeText", "HTTPFields"]),
        .target(name: "EventLoop", dependencies: ["CLibUV", "ByteBuffers", "Locking"], swiftSettings: hotPath),
        .target(name: "HTTP1", dependencies: ["CLLHTTP", "ByteBuffers", "HTTPFields"], swiftSettings: hotPath),
        .target(name: "Endpoints", dependencies: ["HTTPFields"], swiftSettings: hotPath),
        .target(name: "Routing", dependencies: ["HTTPFields", "Endpoints"], swiftSettings: hotPath),
        // Keys, signatures, SHA-256, HMAC, AES-256-GCM, random bytes: OpenSSL primitives, no I/O.
        .target(name: "Crypto", dependencies: ["COpenSSL"]),
        // The TLS engine over memory buffers; from Crypto OpenSSL's error queue, and the
        // certificates and keys a server configuration is built from in memory.
        .target(name: "TLS", dependencies: ["COpenSSL", "Crypto", "ByteBuffers", "Locking"], swiftSettings: hotPath),
        // The forward proxy's CA (ca.pem, ca.key in a 0700 directory), name-constrained to the
        // intercepted hosts, and the leaves it mints for them (TLS server configurations).
        .target(name: "LocalCA", dependencies: ["Crypto", "TLS", "Routing", "Endpoints", "Locking"]),
        // Pure Swift; the crypto it needs (keys, signatures, digests) comes from Crypto, which holds OpenSSL.
        // Endpoints for a DPoP proof's `htu`, read and normalized as the relay reads every URL.
        .target(name: "JOSE", dependencies: ["Crypto", "JSON", "Endpoints"]),
        // JOSE and Crypto for client assertions (private_key_jwt, client_secret_jwt): signing is no I/O.
        // Endpoints for reading URLs an IdP publishes (discovery, device verification URIs).
        .target(name: "OAuth2", dependencies: ["SafeText", "HTTPFields", "Endpoints", "JOSE", "JSON", "Crypto"], swiftSettings: hotPath),
        .target(name: "Config", dependencies: ["SafeText", "HTTPFields", "Endpoints", "Routing", "OAuth2", "JOSE", "JSON", "Crypto", "RedisProtocol",
                                              "WatchedFiles"], swiftSettings: hotPath),
        .target(name: "TLSStream", dependencies: ["EventLoop", "TLS", "ByteBuffers"], swiftSettings: hotPath),
        // One HTTP/1 client connection (`UpstreamConnection`) for the proxy's upstream pool and the
        // token thread's `sendHTTPRequest`: on the request path, so built like it.
        .target(name: "HTTPClient", dependencies: ["EventLoop", "HTTP1", "HTTPFields", "ByteBuffers", "TLS", "TLSStream"],
                swiftSettings: hotPath),
        // Encrypted token entries on disk (AES-GCM from Crypto, flock); no sockets.
        .target(name: "TokenStore", dependencies: ["SafeText", "OAuth2", "HTTPFields", "Crypto", "Locking"]),
        // Redis values with no socket: endpoint URLs, commands in RESP, replies and their reader.
        .target(name: "RedisProtocol", dependencies: ["SafeText", "Endpoints", "HTTPFields"]),
        // A Redis connection on an EventLoop, over TCP or TLS (the relay's own streams).
        .target(name: "RedisClient", dependencies: ["EventLoop", "RedisProtocol", "TLS", "TLSStream"]),
        .target(name: "Tokens", dependencies: ["SafeText",
            "OAuth2", "TokenStore", "EventLoop", "HTTPClient", "HTTPFields", "Endpoints", "JOSE", "Crypto", "TLS", "Locking", "RedisProtocol", "RedisClient", "WatchedFiles",
            .product(name: "Logging", package: "swift-log"),
        ]),
        .target(name: "LocalHTTP", dependencies: ["EventLoop", "HTTP1", "HTTPFields", "ByteBuffers", "Locking"]),
        // QR Code symbols for the terminal (`oauth-relay login`'s device logins); pure Swift, no I/O.
        .target(name: "QRCode"),
        // On the request path: each request records into its worker's series (RouteSeries).
        .target(name: "RelayMetrics", dependencies: ["Locking", .product(name: "Prometheus", package: "swift-prometheus")],
                swiftSettings: hotPath),
        // What a browser may make the relay do, decided on values with no socket: the Host names a
        // listener serves (DNS rebinding), what a browser said of a request (Origin, Fetch
        // Metadata), the verdict on a route with a credential, the rule for starting a login.
        // For the data listeners (Proxy), the admin listener and the login pages. On the hot path:
        // `ListenerHosts.serves` is inlinable.
        .target(name: "BrowserSafety", dependencies: ["HTTP1", "HTTPFields", "Endpoints", "Routing", "Config", "OAuth2"], swiftSettings: hotPath),
        // The relay's pages for a person logging in, on the data listeners: they decide, Proxy
        // serves them (a `LoginAnswer` written as its own `Problem`).
        .target(name: "LoginPages", dependencies: ["SafeText", "BrowserSafety", "HTTP1", "HTTPFields", "Endpoints", "Config", "OAuth2", "Tokens"]),
        // The operator's listener (health, readiness, metrics, identities, logins, logouts, reload)
        // on LocalHTTP, on the main thread's loop; no part of the proxy: the Host names it serves
        // and the reload are handed to it. LoginPages for the URL that starts a browser login.
        .target(name: "AdminAPI", dependencies: ["SafeText",
            "LocalHTTP", "BrowserSafety", "LoginPages", "EventLoop", "HTTPFields", "Locking", "OAuth2", "RelayMetrics", "Tokens",
        ]),
        .target(name: "Proxy", dependencies: ["SafeText",
            "EventLoop", "HTTP1", "HTTPFields", "Endpoints", "Routing", "Config", "ByteBuffers", "OAuth2", "Tokens", "TLS", "TLSStream", "RelayMetrics", "Locking",
            "BrowserSafety", "LoginPages",
            // The upstream connection; the pool that keeps them is Proxy's.
            "HTTPClient",
            // DPoP proofs for forwarded requests, signed on the worker.
            "JOSE", "Crypto",
            .product(name: "Logging", package: "swift-log"),
        ], swiftSettings: hotPath),
        .executableTarget(name: "OAuthRelay", dependencies: ["SafeText",
            "Proxy", "Config", "EventLoop", "HTTP1", "ByteBuffers", "OAuth2", "Tokens", "TokenStore", "HTTPClient", "TLS", "RelayMetrics",
            "LocalHTTP", "HTTPFields", "RedisProtocol", "QRCode", "JSON", "WatchedFiles",
            // The admin listener, given the Host names it serves; the login URL for `login` and `token`.
            "AdminAPI", "BrowserSafety", "LoginPages",
            // `oauth-relay ca`, and the forward proxy's CA opened at start.
            "LocalCA",
            // The commit it was built from.
            "CRelayBuild",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
        ], path: "Sources/oauth-relay"),

        .testTarget(name: "ByteBuffersTests", dependencies: ["ByteBuffers"]),
        .testTarget(name: "HTTP1Tests", dependencies: ["SafeText", "HTTP1", "ByteBuffers", "CLLHTTP"]),
        .testTarget(name: "HTTPFieldsTests", dependencies: ["SafeText", "HTTPFields"]),
        .testTarget(name: "SafeTextTests", dependencies: ["SafeText"]),
        .testTarget(name: "JSONTests", dependencies: ["JSON"]),
        .testTarget(name: "EndpointsTests", dependencies: ["Endpoints"]),
        .testTarget(name: "WatchedFilesTests", dependencies: ["WatchedFiles", "FileTestSupport"]),
        .testTarget(name: "RoutingTests", dependencies: ["Routing", "Endpoints"]),
        // A scratch directory, shared by every test target that writes files.
        .target(name: "FileTestSupport", path: "Tests/FileTestSupport"),
        .testTarget(name: "ConfigTests", dependencies: ["SafeText", "Config", "HTTPFields", "Endpoints", "Routing", "OAuth2", "JOSE", "Crypto", "RedisProtocol",
                                                        "FileTestSupport", "CertificateTestSupport"]),
        .testTarget(name: "ProxyTests", dependencies: ["SafeText", "Proxy", "BrowserSafety", "HTTP1", "HTTPFields", "Endpoints", "Routing", "Config", "OAuth2",
                                                       "Tokens", "JOSE", "TLS", "HTTPClient", "CertificateTestSupport",
                                                       // InboundCheckTests: keys that sign the tokens checked.
                                                       "Crypto", "JSON",
                                                       // HeldResponseTests: a recording client stream; ProxyWorkerLeakTests: a worker
                                                       // on the leak-checked loop.
                                                       "EventLoop", "ByteBuffers", "LoopTestSupport",
                                                       .product(name: "Logging", package: "swift-log")]),
        .testTarget(name: "LoginPagesTests", dependencies: ["LoginPages", "HTTP1", "Endpoints", "OAuth2"]),
        .testTarget(name: "AdminAPITests", dependencies: ["AdminAPI", "BrowserSafety", "LocalHTTP", "Config"]),
        // The leak check of the event loop's tests, shared by every test target that runs a loop.
        .target(name: "LoopTestSupport", dependencies: ["EventLoop"], path: "Tests/LoopTestSupport"),
        .testTarget(name: "EventLoopTests", dependencies: ["EventLoop", "ByteBuffers", "LoopTestSupport"]),
        // Certificates whose bytes the `openssl` command computed, not the relay: fixtures and
        // certificates made for keys a test generates (client certificates in assertion headers).
        .target(name: "CertificateTestSupport", path: "Tests/CertificateTestSupport"),
        .testTarget(name: "OAuth2Tests", dependencies: ["SafeText", "OAuth2", "Endpoints", "HTTPFields", "Config", "JOSE", "Crypto",
                                                        "CertificateTestSupport"]),
        .testTarget(name: "CryptoTests", dependencies: ["Crypto", "CertificateTestSupport"]),
        .testTarget(name: "TLSTests", dependencies: ["TLS", "Crypto"]),
        .testTarget(name: "TLSStreamTests", dependencies: ["TLSStream", "TLS", "EventLoop", "LoopTestSupport", "CertificateTestSupport"]),
        // COpenSSL: the certificates read back and verified by OpenSSL itself, not by the code under test.
        .testTarget(name: "LocalCATests", dependencies: ["LocalCA", "Crypto", "TLS", "Routing", "COpenSSL", "ByteBuffers", "FileTestSupport"]),
        .testTarget(name: "JOSETests", dependencies: ["JOSE", "Crypto", "Endpoints", "CertificateTestSupport"]),
        // Fixtures: reference symbols made by segno (PyPI), read from the source tree.
        .testTarget(name: "QRCodeTests", dependencies: ["QRCode"], exclude: ["Fixtures"]),
        // swift-prometheus itself: the relay's own per-request series must read exactly like the library's.
        .testTarget(name: "RelayMetricsTests", dependencies: ["RelayMetrics", .product(name: "Prometheus", package: "swift-prometheus")]),
        .testTarget(name: "LocalHTTPTests", dependencies: ["LocalHTTP", "EventLoop", "LoopTestSupport"]),
        .testTarget(name: "TokenStoreTests", dependencies: ["SafeText", "TokenStore", "OAuth2", "Endpoints", "Crypto", "FileTestSupport"]),
        // The upstream connection's deadlines, with no socket.
        .testTarget(name: "HTTPClientTests", dependencies: ["HTTPClient", "EventLoop", "HTTP1"]),
        .testTarget(name: "TokensTests", dependencies: ["SafeText",
            "Tokens", "TokenStore", "Crypto", "Endpoints", "OAuth2", "EventLoop", "HTTPClient", "RedisProtocol", "LoopTestSupport",
            "FileTestSupport", "CertificateTestSupport", "WatchedFiles",
            .product(name: "Logging", package: "swift-log"),
        ]),
        .testTarget(name: "RedisProtocolTests", dependencies: ["SafeText", "RedisProtocol", "OAuth2"]),
        // Also runs the shared store's scripts (Tokens) on a real Redis, through the connection.
        .testTarget(name: "RedisClientTests", dependencies: ["SafeText",
            "RedisClient", "RedisProtocol", "EventLoop", "TLS", "Tokens", "TokenStore", "OAuth2", "LoopTestSupport",
            // SharedTokens itself on a real Redis: its store key and its logger.
            "Crypto", "Endpoints", .product(name: "Logging", package: "swift-log"),
            // The token loop as a whole (TokenFetcher) with a shared store: its limits.
            "HTTPClient",
        ]),
    ],
    swiftLanguageModes: [.v6]
)
