// LocalCA: the forward proxy's certificate authority, kept in a directory of its own (`ca.pem`,
// `ca.key`), name-constrained to the hosts the routes intercept (`NameConstraintSet`), and the
// leaves it mints for those hosts on the data path (`InterceptionCertificates`).
//
// The key never leaves this module except into `ca.key` (0600, in a 0700 directory) and into
// OpenSSL to sign: no API returns its bytes. A certificate or key that cannot be read is an
// error and nothing is overwritten; a CA whose constraints no longer match the hosts is
// replaced by a new one (`Change.reissued`), which the operator must trust again.

import Crypto
import Routing

/// The forward proxy's CA: its certificate, its key, and the hosts it is constrained to.
///
/// Sendable: every property is immutable and Sendable (`X509Certificate` and `PrivateKey` are
/// shared read-only between threads).
public final class LocalCA: Sendable {
    /// What `loadOrCreate` did.
    public enum Change: Sendable, Equatable {
        /// The CA in the directory, constrained to the hosts asked for.
        case loaded
        /// No CA was there: a new one.
        case created
        /// The CA there was for other hosts (or about to expire, or not yet valid by the clock):
        /// a new one replaced it, and whoever trusted `previousFingerprint` must trust the new
        /// one instead.
        case reissued(previousFingerprint: String)
    }

    public let certificate: X509Certificate
    let key: PrivateKey
    public let constraints: NameConstraintSet
    /// `ca.pem`, for `curl --cacert` and the trust stores.
    public let certificatePath: String

    /// A CA that expires within this many seconds is replaced: its leaves could not live a day.
    static let renewalMargin: Int64 = 86_400

    init(certificate: X509Certificate, key: PrivateKey, constraints: NameConstraintSet, certificatePath: String) {
        self.certificate = certificate
        self.key = key
        self.constraints = constraints
        self.certificatePath = certificatePath
    }

    public var hosts: [HostPattern] { constraints.hosts }

    /// Where the CA in `directory` keeps its certificate (`ca.pem`).
    public static func certificatePath(inDirectory directory: String) -> String {
        directory + "/ca.pem"
    }

    /// The SHA-256 fingerprint as `openssl x509 -fingerprint -sha256` prints it: `AA:BB:…`.
    public var fingerprint: String { Self.fingerprintText(certificate.sha256Fingerprint) }

    static func fingerprintText(_ digest: [UInt8]) -> String {
        let digits = Array("0123456789ABCDEF")
        return digest.map { String([digits[Int($0 >> 4)], digits[Int($0 & 0x0f)]]) }.joined(separator: ":")
    }

    /// The CA in `directory` when it is constrained to exactly `hosts`; otherwise a new one,
    /// written there (the key first). The directory is created 0700 when missing.
    ///
    /// Refused: no host; a directory or key file others may use; one file without the other; a
    /// file that cannot be read, or a key that is not the certificate's (then nothing is written).
    public static func loadOrCreate(directory: String, hosts: [HostPattern], now: Int64) throws(LocalCAError) -> (LocalCA, Change) {
        let constraints = try NameConstraintSet(hosts: hosts)
        let files = try CADirectory.prepare(directory)
        return try files.withLock { () throws(LocalCAError) -> (LocalCA, Change) in
            guard let existing = try load(files, constraints: constraints) else {
                return (try create(files, constraints: constraints, now: now), .created)
            }
            if try existing.hasProfile(of: constraints), existing.certificate.notBefore <= now,
               existing.certificate.notAfter - now > renewalMargin {
                return (existing, .loaded)
            }
            return (try create(files, constraints: constraints, now: now), .reissued(previousFingerprint: existing.fingerprint))
        }
    }

    /// Whether the certificate limits the CA as one issued now for `constraints` would: the same
    /// name constraints and extended key usage, byte for byte. A CA for other hosts, or one
    /// issued before a limit was added, does not.
    func hasProfile(of constraints: NameConstraintSet) throws(LocalCAError) -> Bool {
        for limit in CertificateProfiles.authorityLimits(constraints) {
            let expected: [UInt8]
            do throws(CryptoError) { expected = try limit.der() } catch { throw .crypto(error) }
            guard certificate.extensionDER(limit.kind) == expected else { return false }
        }
        return true
    }

    /// The CA in `files`, or nil when neither file exists.
    private static func load(_ files: CADirectory, constraints: NameConstraintSet) throws(LocalCAError) -> LocalCA? {
        let keyBytes = try files.contents(files.keyPath, privateToOwner: true)
        let certificateBytes = try files.contents(files.certificatePath, privateToOwner: false)
        switch (keyBytes, certificateBytes) {
        case (nil, nil):
            return nil
        case (nil, _?):
            throw .incomplete(present: files.certificatePath, missing: files.keyPath)
        case let (keyBytes?, certificateBytes):
            let certificate: X509Certificate?
            do throws(CryptoError) {
                certificate = try certificateBytes.map { bytes throws(CryptoError) in
                    try X509Certificate(pem: String(decoding: bytes, as: UTF8.self))
                }
            } catch {
                throw .unreadable(path: files.certificatePath, reason: "\(error)")
            }
            let key: PrivateKey
            do throws(CryptoError) {
                key = try PrivateKey(pem: String(decoding: keyBytes, as: UTF8.self))
            } catch {
                throw .unreadable(path: files.keyPath, reason: "\(error)")
            }
            guard key.kind == .ecP256 else { throw .unreadable(path: files.keyPath, reason: "not an EC P-256 key") }
            if let certificate, certificate.isCertified(key) {
                return LocalCA(certificate: certificate, key: key, constraints: constraints, certificatePath: files.certificatePath)
            }
            if let completed = try completeReplacement(files, key: key) {
                return LocalCA(certificate: completed, key: key, constraints: constraints, certificatePath: files.certificatePath)
            }
            guard certificate != nil else { throw .incomplete(present: files.keyPath, missing: files.certificatePath) }
            throw .keyMismatch(key: files.keyPath, certificate: files.certificatePath)
        }
    }

    /// A replacement cut short between its two renames (`create`): `ca.key` is the new key and
    /// `ca.pem.new` its certificate, renamed over `ca.pem` now. Nil when `ca.pem.new` is missing,
    /// unreadable, or not `key`'s certificate (then the pair is refused as before).
    private static func completeReplacement(_ files: CADirectory, key: PrivateKey) throws(LocalCAError) -> X509Certificate? {
        let pending = CADirectory.pendingPath(files.certificatePath)
        guard let bytes = try files.contents(pending, privateToOwner: false),
              let certificate = try? X509Certificate(pem: String(decoding: bytes, as: UTF8.self)),
              certificate.isCertified(key) else { return nil }
        try files.commit(pending, to: files.certificatePath)
        try files.syncDirectory()
        return certificate
    }

    /// A new CA for `constraints`, written to `files`: both files written and fsynced as `.new`
    /// files, then renamed, the key first (a process killed between the renames leaves a key
    /// whose certificate is `ca.pem.new`: `load` completes the replacement).
    private static func create(_ files: CADirectory, constraints: NameConstraintSet, now: Int64) throws(LocalCAError) -> LocalCA {
        let key: PrivateKey
        let certificate: X509Certificate
        let keyPEM: String
        let certificatePEM: String
        do throws(CryptoError) {
            key = try PrivateKey.generate(.ecP256)
            let label = fingerprintText(try SecureRandom.bytes(3)).filter { $0 != ":" }.lowercased()
            let fields = CertificateProfiles.authority(constraints: constraints, label: label,
                                                       serialNumber: try CertificateProfiles.randomSerialNumber(), now: now)
            certificate = try X509Certificate.issue(fields, subjectKey: key.publicKey, issuer: nil, issuerKey: key)
            keyPEM = try key.pemRepresentation()
            certificatePEM = try certificate.pemRepresentation()
        } catch {
            throw .crypto(error)
        }
        var keyBytes = Array(keyPEM.utf8)
        defer { keyBytes.withUnsafeMutableBytes { _ = $0.initializeMemory(as: UInt8.self, repeating: 0) } }
        let pendingKey = try files.writePending(files.keyPath, with: keyBytes, mode: 0o600)
        let pendingCertificate: String
        do throws(LocalCAError) {
            pendingCertificate = try files.writePending(files.certificatePath, with: Array(certificatePEM.utf8), mode: 0o644)
        } catch {
            files.discard(pendingKey)
            throw error
        }
        try files.commit(pendingKey, to: files.keyPath)
        try files.commit(pendingCertificate, to: files.certificatePath)
        try files.syncDirectory()
        return LocalCA(certificate: certificate, key: key, constraints: constraints, certificatePath: files.certificatePath)
    }

    /// A leaf for `host` signed by this CA, with a fresh key: whatever `host` is. The proxy asks
    /// through `InterceptionCertificates`, which mints only for hosts `constraints` permits;
    /// tests ask here to show that clients refuse a leaf outside the constraints.
    func issueLeaf(forHost host: String, now: Int64) throws(CryptoError) -> (certificate: X509Certificate, key: PrivateKey) {
        let key = try PrivateKey.generate(.ecP256)
        let fields = CertificateProfiles.leaf(host: host, serialNumber: try CertificateProfiles.randomSerialNumber(), now: now,
                                              authorityNotAfter: certificate.notAfter)
        return (try X509Certificate.issue(fields, subjectKey: key.publicKey, issuer: certificate, issuerKey: self.key), key)
    }
}
