import CertificateTestSupport
import Crypto
import Endpoints
import FileTestSupport
import Foundation
import OAuth2
import SafeText
import WatchedFiles
@testable import Tokens
import XCTest

/// Credential files read again when they change, with real files: `FileIdentity` (what says a
/// file changed) and `CredentialFileWatch` (the last good content, one warning per outage).
final class CredentialFileWatchTests: XCTestCase {
    private var directory: TemporaryDirectory!

    override func setUpWithError() throws {
        directory = try TemporaryDirectory()
    }

    override func tearDown() {
        directory.remove()
    }

    private func identity(of path: String) -> Result<FileIdentity, FileUnavailable> {
        FileIdentity.current(of: path)
    }

    /// A client_credentials identity whose secret was loaded as `loaded` from `path`.
    private func watchedIdentity(secretFile path: String, loaded: String = "secret-1") -> Identity {
        var identity = Identity(name: "orders", tokenUrl: HTTPURL(scheme: .https, host: "idp.example.com", path: "/token"),
                                clientAuth: .post(id: "relay", secret: Secret(loaded)))
        identity.credentialFiles = [CredentialFile(role: .clientSecret, path: path, key: "clientSecretFile")]
        return identity
    }

    private func secret(of watch: CredentialFileWatch) -> String? {
        guard case .post(_, let secret) = watch.current.clientAuth else { return nil }
        return secret.value
    }

    /// Sets the file's modification time back to `time` (what a copy that keeps times does).
    private func setModified(_ path: String, to time: timespec) {
        var times = [time, time]
        XCTAssertEqual(utimensat(AT_FDCWD, path, &times, 0), 0)
    }

    private func modified(_ path: String) -> timespec {
        var info = stat()
        XCTAssertEqual(stat(path, &info), 0)
        return info.st_mtim
    }

    // MARK: - FileIdentity

    func testAnUnchangedFileHasTheSameIdentity() throws {
        let path = try directory.write("secret", "one")
        XCTAssertEqual(try identity(of: path).get(), try identity(of: path).get())
    }

    func testAnInPlaceRewriteAtTheSameSizeIsToldByTheNanosecondsOfItsModificationTime() throws {
        let path = try directory.write("secret", "one")
        let before = try identity(of: path).get()
        let handle = try XCTUnwrap(FileHandle(forWritingAtPath: path))
        handle.write(Data("two".utf8))
        try handle.close()
        // Within the same second, one nanosecond on (the kernel's clock ticks coarser than that).
        var later = modified(path)
        let seconds = before.modificationNanoseconds / 1_000_000_000
        let nanoseconds = before.modificationNanoseconds % 1_000_000_000
        later.tv_sec = Int(seconds)
        later.tv_nsec = nanoseconds == 999_999_999 ? 0 : Int(nanoseconds) + 1
        setModified(path, to: later)
        let after = try identity(of: path).get()
        XCTAssertEqual(after.inode, before.inode, "the same file, rewritten")
        XCTAssertEqual(after.size, before.size)
        XCTAssertNotEqual(after, before)
    }

    func testASymlinkSwapChangesTheTargetAndADeleteThenCreateTheInode() throws {
        try directory.write("a", "one")
        try directory.write("b", "one")
        let link = directory.path + "/secret"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: "a")
        let before = try identity(of: link).get()
        XCTAssertEqual(before.resolvedPath, directory.path + "/a")
        try FileManager.default.removeItem(atPath: link)
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: "b")
        let after = try identity(of: link).get()
        XCTAssertEqual(after.resolvedPath, directory.path + "/b")
        XCTAssertNotEqual(after, before)
        var sameTimes = before
        sameTimes.resolvedPath = after.resolvedPath
        XCTAssertNotEqual(sameTimes, before, "the target alone tells two files apart")
    }

    func testAMissingFileAndADirectoryAreNoFileToRead() throws {
        XCTAssertEqual(identity(of: directory.path + "/missing"), .failure(.missing))
        XCTAssertEqual(identity(of: directory.path + "/missing/deeper"), .failure(.missing))
        XCTAssertEqual(identity(of: directory.path), .failure(.notAFile))
    }

    // MARK: - CredentialFileWatch

    func testAChangedFileIsReadAndRequestsAreMadeWithIt() throws {
        let path = try directory.write("secret", "secret-1\n")
        let watch = CredentialFileWatch(identity: watchedIdentity(secretFile: path))
        XCTAssertEqual(watch.refresh(), [], "the first look reads what was loaded")
        XCTAssertEqual(watch.current, watch.loaded)
        try directory.write("secret", "secret-2\n")
        XCTAssertEqual(watch.refresh(), [.changed(watch.loaded.credentialFiles[0])])
        XCTAssertEqual(secret(of: watch), "secret-2")
        let request = try XCTUnwrap(TokenRequest.grant(for: watch.loaded, at: try XCTUnwrap(watch.loaded.tokenUrl)))
        XCTAssertEqual(String(decoding: watch.request(request).body, as: UTF8.self),
                       "grant_type=client_credentials&client_id=relay&client_secret=secret-2")
    }

    func testANewInitialAccessTokenIsTakenButRebuildsNoTokenRequest() throws {
        let path = try directory.write("initial-access-token", "iat-1\n")
        let tokenUrl = HTTPURL(scheme: .https, host: "as.example.com", path: "/token")
        var configured = Identity(name: "auto-api.example.com", tokenUrl: tokenUrl, clientAuth: .post(id: "configured", secret: Secret("c")))
        configured.auto = AutoSettings(resource: HTTPURL(scheme: .https, host: "api.example.com", path: "/"), initialAccessToken: Secret("iat-1"))
        configured.credentialFiles = [CredentialFile(role: .initialAccessToken, path: path, key: "initialAccessTokenFile")]
        let watch = CredentialFileWatch(identity: configured)
        XCTAssertEqual(watch.refresh(), [])
        try directory.write("initial-access-token", "iat-2\n")
        XCTAssertEqual(watch.refresh(), [.changed(configured.credentialFiles[0])])
        XCTAssertEqual(watch.current.auto?.initialAccessToken, Secret("iat-2"))
        // The identity's requests are made with the client it learnt, not rebuilt as configured.
        var learnt = configured
        learnt.clientAuth = .post(id: "learnt", secret: Secret("l"))
        let request = try XCTUnwrap(TokenRequest.grant(for: learnt, at: tokenUrl))
        XCTAssertEqual(String(decoding: watch.request(request).body, as: UTF8.self),
                       "grant_type=client_credentials&client_id=learnt&client_secret=l")
    }

    func testAnAutoIdentitysInitialAccessTokenFileLeavesItsRequestsWithTheClientItLearnt() throws {
        let path = try directory.write("iat", "iat-1\n")
        var configured = Identity(name: "auto-api", tokenUrl: nil, clientAuth: .unidentified)
        configured.auto = AutoSettings(resource: HTTPURL(scheme: .https, host: "api.example.com", path: "/"),
                                       initialAccessToken: Secret("iat-1"))
        configured.credentialFiles = [CredentialFile(role: .initialAccessToken, path: path, key: "auto.initialAccessTokenFile")]
        let watch = CredentialFileWatch(identity: configured)
        _ = watch.refresh()
        try directory.write("iat", "iat-2\n")
        XCTAssertEqual(watch.refresh(), [.changed(configured.credentialFiles[0])], "the registration reads the new token")
        // The learnt identity: the registered client at the learnt token endpoint.
        var learnt = configured
        learnt.clientAuth = .publicClient(id: "registered-1")
        let tokenURL = HTTPURL(scheme: .https, host: "as.example.com", path: "/token")
        learnt.tokenUrl = tokenURL
        let request = TokenRequest.refresh(for: learnt, refreshToken: Secret("refresh-1"), at: tokenURL)
        XCTAssertEqual(watch.request(request).body, request.body, "built with the learnt client, not the configured one")
        XCTAssertTrue(String(decoding: watch.request(request).body, as: UTF8.self).contains("client_id=registered-1"))
    }

    func testAnUnchangedFileIsNotReadAgain() throws {
        let path = try directory.write("secret", "secret-1")
        let watch = CredentialFileWatch(identity: watchedIdentity(secretFile: path))
        _ = watch.refresh()
        let time = modified(path)
        // Same inode, same size, same mtime: a content the watch must not see.
        let handle = try XCTUnwrap(FileHandle(forWritingAtPath: path))
        handle.write(Data("secret-X".utf8))
        try handle.close()
        setModified(path, to: time)
        XCTAssertEqual(watch.refresh(), [])
        XCTAssertEqual(secret(of: watch), "secret-1")
        let request = try XCTUnwrap(TokenRequest.grant(for: watch.loaded, at: try XCTUnwrap(watch.loaded.tokenUrl)))
        XCTAssertEqual(watch.request(request).body, request.body, "nothing changed: the request as built")
    }

    func testAVanishedFileKeepsTheLastGoodContentWithOneWarningAndOneLineWhenBack() throws {
        let path = try directory.write("secret", "secret-1")
        let watch = CredentialFileWatch(identity: watchedIdentity(secretFile: path))
        let file = watch.loaded.credentialFiles[0]
        try directory.write("secret", "secret-2")
        XCTAssertEqual(watch.refresh(), [.changed(file)])
        try FileManager.default.removeItem(atPath: path)
        XCTAssertEqual(watch.refresh(), [.unusable(file, reason: "no such file")])
        XCTAssertEqual(watch.refresh(), [], "one warning per outage")
        try directory.write("secret", "  \n")
        XCTAssertEqual(watch.refresh(), [], "still the same outage: empty now")
        XCTAssertEqual(secret(of: watch), "secret-2", "the last good content")
        try directory.write("secret", "secret-3")
        XCTAssertEqual(watch.refresh(), [.usableAgain(file), .changed(file)])
        XCTAssertEqual(secret(of: watch), "secret-3")
        XCTAssertEqual(watch.refresh(), [])
    }

    func testAFileThatComesBackUnchangedEndsTheOutageWithoutAChange() throws {
        let path = try directory.write("secret", "secret-1")
        let watch = CredentialFileWatch(identity: watchedIdentity(secretFile: path))
        let file = watch.loaded.credentialFiles[0]
        try FileManager.default.removeItem(atPath: path)
        XCTAssertEqual(watch.refresh(), [.unusable(file, reason: "no such file")])
        try directory.write("secret", "secret-1")
        XCTAssertEqual(watch.refresh(), [.usableAgain(file)])
        XCTAssertEqual(watch.current, watch.loaded)
    }

    func testAnUnusableContentIsNamedNotQuoted() throws {
        let path = try directory.write("assertion", "eyJhbGciOiJub25lIn0.eyJleHAiOjF9.c2ln")
        var identity = watchedIdentity(secretFile: path)
        identity.clientAuth = .clientAssertion(id: nil, assertion: Secret("eyJhbGciOiJub25lIn0.eyJleHAiOjF9.c2ln"))
        identity.credentialFiles = [CredentialFile(role: .clientAssertion, path: path, key: "clientAssertionFile")]
        let watch = CredentialFileWatch(identity: identity)
        try directory.write("assertion", "not-a-jwt-but-secret")
        XCTAssertEqual(watch.refresh(), [.unusable(identity.credentialFiles[0],
                                                   reason: "not a JWT (a compact JWS: three base64url parts separated by dots)")])
        try directory.write([0xFF, 0xFE, 0x41], to: "assertion")
        XCTAssertEqual(watch.refresh(), [], "the outage goes on")
        XCTAssertEqual(watch.current, watch.loaded)
    }

    func testEveryFileOfAnIdentityIsWatchedAndTakenTogether() throws {
        let secretPath = try directory.write("secret", "secret-1")
        let passwordPath = try directory.write("password", "password-1")
        var identity = watchedIdentity(secretFile: secretPath)
        identity.grant = .password(username: "svc", password: Secret("password-1"))
        identity.credentialFiles.append(CredentialFile(role: .password, path: passwordPath, key: "passwordFile"))
        let watch = CredentialFileWatch(identity: identity)
        try directory.write("secret", "secret-2")
        try directory.write("password", "password-2")
        XCTAssertEqual(watch.refresh().count, 2)
        XCTAssertEqual(secret(of: watch), "secret-2")
        XCTAssertEqual(watch.current.credential(.password), Secret("password-2"))
    }

    // MARK: - A key and its certificate

    /// A private_key_jwt identity loaded from `key.pem` (`key`) and `cert.pem` (`certificate`).
    private func certifiedWatch(_ key: PrivateKey, _ certificate: IssuedCertificate) throws -> CredentialFileWatch {
        let keyPath = try directory.write("key.pem", key.pemRepresentation())
        let certificatePath = try directory.write("cert.pem", certificate.pem)
        let assertionKey = try ClientAssertionKey(keyPEM: key.pemRepresentation(), certificatePEM: certificate.pem, keyID: "k1")
        var identity = Identity(name: "graph", tokenUrl: HTTPURL(scheme: .https, host: "idp.example.com", path: "/token"),
                                clientAuth: .privateKeyJWT(id: "relay", key: assertionKey))
        identity.credentialFiles = [CredentialFile(role: .clientKey, path: keyPath, key: "clientKeyFile"),
                                    CredentialFile(role: .clientCertificate, path: certificatePath, key: "clientCertFile")]
        return CredentialFileWatch(identity: identity)
    }

    private func expectedKey(_ key: PrivateKey, _ certificate: IssuedCertificate) throws -> ClientAuth {
        .privateKeyJWT(id: "relay", key: try ClientAssertionKey(keyPEM: key.pemRepresentation(), certificatePEM: certificate.pem, keyID: "k1"))
    }

    func testARenewedCertificateIsTakenAlone() throws {
        let key = try PrivateKey.generate(.ecP256)
        let watch = try certifiedWatch(key, try IssuedCertificate.selfSigned(forKey: key.pemRepresentation(), subject: "/CN=first"))
        let renewed = try IssuedCertificate.selfSigned(forKey: key.pemRepresentation(), subject: "/CN=renewed")
        try directory.write("cert.pem", renewed.pem)
        XCTAssertEqual(watch.refresh(), [.changed(watch.loaded.credentialFiles[1])])
        XCTAssertEqual(watch.current.clientAuth, try expectedKey(key, renewed))
    }

    func testAKeyAndCertificateSwappedTogetherAreTakenAsOnePair() throws {
        let (first, second) = (try PrivateKey.generate(.ecP256), try PrivateKey.generate(.ecP256))
        let watch = try certifiedWatch(first, try IssuedCertificate.selfSigned(forKey: first.pemRepresentation()))
        let certificate = try IssuedCertificate.selfSigned(forKey: second.pemRepresentation())
        try directory.write("key.pem", second.pemRepresentation())
        try directory.write("cert.pem", certificate.pem)
        XCTAssertEqual(watch.refresh(), [.changed(watch.loaded.credentialFiles[0])], "no warning: the pair fits")
        XCTAssertEqual(watch.current.clientAuth, try expectedKey(second, certificate))
        XCTAssertEqual(watch.refresh(), [], "the certificate was read with its key")
    }

    func testAKeyWhoseCertificateComesLaterWaitsForIt() throws {
        let (first, second) = (try PrivateKey.generate(.ecP256), try PrivateKey.generate(.ecP256))
        let watch = try certifiedWatch(first, try IssuedCertificate.selfSigned(forKey: first.pemRepresentation()))
        let (keyFile, certificateFile) = (watch.loaded.credentialFiles[0], watch.loaded.credentialFiles[1])
        try directory.write("key.pem", second.pemRepresentation())
        XCTAssertEqual(watch.refresh(), [.unusable(keyFile, reason: CredentialFileProblem.certificateKeyMismatch.description)])
        XCTAssertEqual(watch.current, watch.loaded, "the last good pair")
        let certificate = try IssuedCertificate.selfSigned(forKey: second.pemRepresentation())
        try directory.write("cert.pem", certificate.pem)
        XCTAssertEqual(watch.refresh(), [.usableAgain(keyFile), .changed(certificateFile)])
        XCTAssertEqual(watch.current.clientAuth, try expectedKey(second, certificate))
        XCTAssertEqual(watch.refresh(), [])
    }
}
