import Config
import Crypto
import Endpoints
import FileTestSupport
import Foundation
import JOSE
import OAuth2
import WatchedFiles
import XCTest

/// Which files a configuration names for long-lived objects (`watchedFiles`: re-applied when one
/// rotates), the client certificate's thumbprint that makes a renewed certificate a changed
/// identity, and `limits.credentialFilePollSeconds`.
final class WatchedFilesConfigTests: XCTestCase {
    private static let dpopKey = try! PrivateKey.generate(.ecP256)

    /// A PEM block of `label` around the base64 of `bytes`, on 64-column lines.
    private func pem(_ label: String, _ bytes: [UInt8]) -> String {
        let base64 = Data(bytes).base64EncodedString()
        var lines: [String] = []
        var rest = Substring(base64)
        while !rest.isEmpty {
            lines.append(String(rest.prefix(64)))
            rest = rest.dropFirst(64)
        }
        return "-----BEGIN \(label)-----\n" + lines.joined(separator: "\n") + "\n-----END \(label)-----\n"
    }

    func testEveryCertificateKeyAndCAFileAndTheDPoPAndStoreKeyFilesAreWatchedWithTheirJSONPaths() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        for name in ["listener.pem", "listener.key", "clients-ca.pem", "ca.pem", "client.pem", "client.key", "secret"] {
            try directory.write(name, "x")
        }
        try directory.write("dpop.pem", try Self.dpopKey.pemRepresentation())
        try directory.write("store.key", Data([UInt8](repeating: 1, count: 32)).base64EncodedString())
        let config = try decodeConfig("""
        { "listenTls": { "address": "127.0.0.1:8443", "certFile": "listener.pem", "keyFile": "listener.key",
                         "clientCaFile": "clients-ca.pem" },
          "store": { "path": "\(directory.path)/store", "keyFile": "store.key" },
          "identities": { "orders": { "tokenUrl": "https://idp/token", "clientId": "c", "clientSecretFile": "secret",
                                      "tls": { "caFile": "ca.pem", "clientCert": "client.pem", "clientKey": "client.key" },
                                      "dpop": { "keyFile": "dpop.pem" } } },
          "routes": [ { "upstream": "https://orders.internal", "tls": { "caFile": "ca.pem" } } ] }
        """, baseDirectory: directory.path)
        let path = directory.path
        XCTAssertEqual(config.watchedFiles.map(\.description), [
            "$.listenTls.certFile \(path)/listener.pem",
            "$.listenTls.keyFile \(path)/listener.key",
            "$.listenTls.clientCaFile \(path)/clients-ca.pem",
            "$.store.keyFile \(path)/store.key",
            "$.identities.orders.tls.caFile \(path)/ca.pem",
            "$.identities.orders.tls.clientCert \(path)/client.pem",
            "$.identities.orders.tls.clientKey \(path)/client.key",
            "$.identities.orders.dpop.keyFile \(path)/dpop.pem",
            "$.routes[0].tls.caFile \(path)/ca.pem",
        ])
        // The token request's own credentials are the token thread's to re-read, not watched here.
        XCTAssertFalse(config.watchedFiles.contains { $0.path.hasSuffix("/secret") })
    }

    /// Each watched file carries its identity as the configuration read it, which the watcher
    /// starts from: a file rotated after the read (before the watcher starts) is then a change.
    func testEachWatchedFileCarriesItsIdentityAsItWasRead() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write("dpop.pem", try Self.dpopKey.pemRepresentation())
        try directory.write("store.key", Data([UInt8](repeating: 1, count: 32)).base64EncodedString())
        let config = try decodeConfig("""
        { "store": { "path": "\(directory.path)/store", "keyFile": "store.key" },
          "identities": { "orders": { "tokenUrl": "https://idp/token", "clientId": "c", "dpop": { "keyFile": "dpop.pem" } } } }
        """, baseDirectory: directory.path)
        XCTAssertEqual(config.watchedFiles.map(\.key), ["$.store.keyFile", "$.identities.orders.dpop.keyFile"])
        let readAs = config.watchedFiles.map(\.atLoad)
        XCTAssertEqual(readAs, config.watchedFiles.map { FileIdentity.observe(path: $0.path) })
        XCTAssertFalse(readAs.contains(nil))
        try directory.write("dpop.pem", try PrivateKey.generate(.ecP256).pemRepresentation() + "\n")
        let changes = WatchedFileChanges(filesAtLoad: config.watchedFiles)
        let now = Dictionary(uniqueKeysWithValues: config.watchedFiles.map { ($0.path, FileIdentity.observe(path: $0.path)) })
        XCTAssertEqual(changes.changed(in: now).map(\.key), ["$.identities.orders.dpop.keyFile"])
    }

    func testInlineKeysAndGeneratedDPoPKeysNameNoFile() throws {
        let key = Data([UInt8](repeating: 1, count: 32)).base64EncodedString()
        let config = try decodeConfig("""
        { "store": { "path": "/var/lib/relay", "key": "\(key)" },
          "identities": { "x": { "tokenUrl": "https://idp/token", "clientId": "c", "dpop": true } } }
        """)
        XCTAssertEqual(config.watchedFiles, [])
    }

    func testTheClientCertificateThumbprintIsTheSHA256OfTheFirstCertificatesDER() throws {
        let leaf: [UInt8] = Array("leaf certificate DER".utf8), issuer: [UInt8] = Array("issuer certificate DER".utf8)
        let expected = Base64URL.encode(SHA256.hash(leaf))
        let files = ["chain.pem": pem("CERTIFICATE", leaf) + pem("CERTIFICATE", issuer), "client.key": "key",
                     "other.pem": pem("CERTIFICATE", issuer), "junk.pem": "no certificate here"]
        func thumbprint(_ file: String) throws -> String? {
            let json = identityJSON(#""clientId": "c", "tls": { "clientCert": "\#(file)", "clientKey": "client.key" }"#)
            return try decodeConfig(json, besideFiles: files).get().identities["x"]?.tls?.clientCertThumbprint
        }
        XCTAssertEqual(try thumbprint("chain.pem"), expected)
        XCTAssertEqual(try thumbprint("other.pem"), Base64URL.encode(SHA256.hash(issuer)))
        // Not a certificate: TLS says so when it loads the file; the thumbprint is just absent.
        XCTAssertNil(try thumbprint("junk.pem"))
        XCTAssertNil(try identity(#""clientId": "c""#).tls?.clientCertThumbprint)
    }

    func testAnIdentityWhoseCertificateWasRenewedInPlaceIsAChangedIdentity() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write("client.key", "key")
        let json = identityJSON(#""clientId": "c", "tls": { "clientCert": "client.pem", "clientKey": "client.key" }"#)
        try directory.write("client.pem", pem("CERTIFICATE", Array("first".utf8)))
        let before = try XCTUnwrap(decodeConfig(json, baseDirectory: directory.path).identities["x"])
        XCTAssertEqual(try decodeConfig(json, baseDirectory: directory.path).identities["x"], before)
        try directory.write("client.pem", pem("CERTIFICATE", Array("renewed".utf8)))
        let after = try XCTUnwrap(decodeConfig(json, baseDirectory: directory.path).identities["x"])
        XCTAssertEqual(after.tls?.clientCert, before.tls?.clientCert)
        XCTAssertNotEqual(after, before)
    }

    func testTheCredentialFilePollIntervalDefaultsToFiveSeconds() throws {
        XCTAssertEqual(try decodeConfig("{}").limits.credentialFilePollSeconds, 5)
        XCTAssertEqual(try decodeConfig(#"{ "limits": { "credentialFilePollSeconds": 1 } }"#).limits.credentialFilePollSeconds, 1)
        XCTAssertEqual(try decodeConfig(#"{ "limits": { "credentialFilePollSeconds": 3600 } }"#).limits.credentialFilePollSeconds, 3600)
    }

    func testABadCredentialFilePollIntervalIsRefusedAtItsPath() {
        let refusals: [(String, String)] = [
            ("0", "$.limits.credentialFilePollSeconds: must be whole seconds from 1 to 3600, got 0"),
            ("3601", "$.limits.credentialFilePollSeconds: must be whole seconds from 1 to 3600, got 3601"),
            ("-5", "$.limits.credentialFilePollSeconds: must be whole seconds from 1 to 3600, got -5"),
            ("1.5", "$.limits.credentialFilePollSeconds: expected an integer, got 1.5"),
            (#""5""#, "$.limits.credentialFilePollSeconds: expected an integer, got string"),
        ]
        for (value, message) in refusals {
            XCTAssertEqual(describe(configErrors(#"{ "limits": { "credentialFilePollSeconds": \#(value) } }"#)), [message], value)
        }
    }
}
