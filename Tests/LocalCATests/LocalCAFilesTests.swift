import Crypto
import FileTestSupport
import Foundation
@testable import LocalCA
import XCTest

/// Where the CA lives and what `loadOrCreate` does with what it finds: created with the right
/// modes, reused, issued again when the hosts change, and left untouched when it cannot be read.
final class LocalCAFilesTests: CADirectoryTestCase {
    func testAMissingDirectoryIsCreated0700WithTheKey0600AndTheCertificate0644() throws {
        let (ca, change) = try authority()
        XCTAssertEqual(change, .created)
        XCTAssertEqual(try mode(""), 0o700)
        XCTAssertEqual(try mode("ca.key"), 0o600)
        XCTAssertEqual(try mode("ca.pem"), 0o644)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: caDirectory).sorted(), ["ca.key", "ca.pem"])
        XCTAssertEqual(ca.certificatePath, caDirectory + "/ca.pem")
        XCTAssertEqual(try X509Certificate(pem: String(decoding: try bytes("ca.pem"), as: UTF8.self)).der, ca.certificate.der)
        XCTAssertTrue(ca.certificate.isCertified(try PrivateKey(pem: String(decoding: try bytes("ca.key"), as: UTF8.self))))
    }

    func testTheFingerprintIsTheSHA256OfTheDERInOpenSSLsForm() throws {
        let (ca, _) = try authority()
        let expected = SHA256.hash(ca.certificate.der).map { String(format: "%02X", $0) }.joined(separator: ":")
        XCTAssertEqual(ca.fingerprint, expected)
        XCTAssertEqual(ca.fingerprint.count, 32 * 3 - 1)
    }

    func testASecondOpenWithTheSameHostsLoadsTheSameCA() throws {
        let (first, _) = try authority()
        let key = try bytes("ca.key")
        let (second, change) = try authority(apiAndExample.reversed(), now: testNow + 86_400)
        XCTAssertEqual(change, .loaded)
        XCTAssertEqual(second.fingerprint, first.fingerprint)
        XCTAssertEqual(try bytes("ca.key"), key)
    }

    func testOtherHostsIssueANewCANamingThePreviousFingerprint() throws {
        let (first, _) = try authority()
        let (second, change) = try authority([.exact("api.test")])
        XCTAssertEqual(change, .reissued(previousFingerprint: first.fingerprint))
        XCTAssertNotEqual(second.fingerprint, first.fingerprint)
        XCTAssertEqual(second.certificate.permittedDNSNames, ["api.test"])
        let (third, again) = try authority([.exact("api.test")])
        XCTAssertEqual(again, .loaded)
        XCTAssertEqual(third.fingerprint, second.fingerprint)
    }

    /// A CA issued before the extended key usage and the e-mail and URI constraints were added
    /// names the same hosts, yet is issued again: the whole profile is compared.
    func testACAWithTheSameHostsButAnOlderProfileIsIssuedAgain() throws {
        let constraints = try NameConstraintSet(hosts: apiAndExample)
        let older = [
            "critical,CA:TRUE,pathlen:0", "critical,keyCertSign,cRLSign", "hash",
            "critical,permitted;DNS:.example.com,permitted;DNS:api.test,excluded;IP:0.0.0.0/0.0.0.0,excluded;IP:::/::",
        ]
        for (index, limits) in [[older[3]], [older[3], "serverAuth"], [constraints.extensionValue]].enumerated() {
            let key = try PrivateKey.generate(.ecP256)
            var extensions = [CertificateExtension(.basicConstraints, older[0]), CertificateExtension(.keyUsage, older[1]),
                              CertificateExtension(.subjectKeyIdentifier, older[2])]
            for limit in limits {
                extensions.append(CertificateExtension(limit.hasPrefix("critical,perm") ? .nameConstraints : .extendedKeyUsage, limit))
            }
            let fields = CertificateFields(commonName: "older CA", serialNumber: [4], notBefore: testNow - 3_600,
                                           notAfter: testNow + 10 * 86_400, extensions: extensions)
            let certificate = try X509Certificate.issue(fields, subjectKey: key.publicKey, issuer: nil, issuerKey: key)
            try FileManager.default.createDirectory(atPath: caDirectory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
            try Data(try key.pemRepresentation().utf8).write(to: URL(fileURLWithPath: caDirectory + "/ca.key"))
            try chmod("ca.key", 0o600)
            try Data(try certificate.pemRepresentation().utf8).write(to: URL(fileURLWithPath: caDirectory + "/ca.pem"))
            XCTAssertEqual(Set(certificate.permittedDNSNames), Set(constraints.permittedDNSNames))
            let (ca, change) = try authority()
            XCTAssertEqual(change, .reissued(previousFingerprint: LocalCA.fingerprintText(certificate.sha256Fingerprint)), "case \(index)")
            XCTAssertTrue(try ca.hasProfile(of: constraints))
        }
    }

    /// A clock stepped back before the CA's notBefore (more than its hour of back-dating): its
    /// leaves would not be valid yet, so it is issued again.
    func testACANotYetValidIsIssuedAgain() throws {
        let (first, _) = try authority()
        let (_, same) = try authority(now: first.certificate.notBefore)
        XCTAssertEqual(same, .loaded)
        let (second, change) = try authority(now: first.certificate.notBefore - 1)
        XCTAssertEqual(change, .reissued(previousFingerprint: first.fingerprint))
        XCTAssertEqual(second.certificate.notBefore, first.certificate.notBefore - 1 - 3_600)
    }

    func testACAAboutToExpireIsIssuedAgain() throws {
        let (first, _) = try authority()
        let (_, change) = try authority(now: first.certificate.notAfter - 3_600)
        XCTAssertEqual(change, .reissued(previousFingerprint: first.fingerprint))
    }

    func testNoHostsIsRefusedAndNothingIsCreated() throws {
        XCTAssertThrowsError(try authority([])) { XCTAssertEqual($0 as? LocalCAError, .noHosts) }
        XCTAssertFalse(FileManager.default.fileExists(atPath: caDirectory))
    }

    func testACorruptKeyIsRefusedAndBothFilesAreLeftAsTheyWere() throws {
        _ = try authority()
        try scratch.write(Array("-----BEGIN PRIVATE KEY-----\nnot base64\n-----END PRIVATE KEY-----\n".utf8), to: "forward-ca/ca.key")
        try chmod("ca.key", 0o600)
        let (key, certificate) = (try bytes("ca.key"), try bytes("ca.pem"))
        XCTAssertThrowsError(try authority([.exact("other.test")])) { error in
            guard case .unreadable(let path, _)? = error as? LocalCAError else { return XCTFail("\(error)") }
            XCTAssertEqual(path, caDirectory + "/ca.key")
        }
        XCTAssertEqual(try bytes("ca.key"), key)
        XCTAssertEqual(try bytes("ca.pem"), certificate)
    }

    func testACorruptCertificateIsRefusedAndLeftAsItWas() throws {
        _ = try authority()
        try scratch.write(Array("garbage".utf8), to: "forward-ca/ca.pem")
        XCTAssertThrowsError(try authority()) { error in
            guard case .unreadable(let path, _)? = error as? LocalCAError else { return XCTFail("\(error)") }
            XCTAssertEqual(path, caDirectory + "/ca.pem")
        }
        XCTAssertEqual(try bytes("ca.pem"), Array("garbage".utf8))
    }

    func testAKeyThatIsNotTheCertificatesIsRefused() throws {
        _ = try authority()
        try scratch.write(Array(try PrivateKey.generate(.ecP256).pemRepresentation().utf8), to: "forward-ca/ca.key")
        try chmod("ca.key", 0o600)
        XCTAssertThrowsError(try authority()) { error in
            XCTAssertEqual(error as? LocalCAError, .keyMismatch(key: caDirectory + "/ca.key", certificate: caDirectory + "/ca.pem"))
        }
    }

    /// A reissue killed between its two renames leaves the new key in ca.key and its certificate
    /// in ca.pem.new (beside the previous ca.pem, or none for a first CA): the next load renames
    /// ca.pem.new over ca.pem and uses that CA. A ca.pem.new of another key changes nothing.
    func testAReplacementCutShortBetweenItsRenamesIsCompletedOnLoad() throws {
        for previous in ["ca.pem of the previous CA", "no ca.pem"] {
            scratch.remove()
            scratch = try TemporaryDirectory()
            _ = try authority()
            let next = try LocalCA.loadOrCreate(directory: scratch.path + "/next", hosts: [.exact("api.test")], now: testNow).0
            let nextPEM = try scratch.bytes(of: "next/ca.pem")
            try scratch.write(try scratch.bytes(of: "next/ca.key"), to: "forward-ca/ca.key")
            try chmod("ca.key", 0o600)
            try scratch.write(nextPEM, to: "forward-ca/ca.pem.new")
            if previous == "no ca.pem" { try FileManager.default.removeItem(atPath: caDirectory + "/ca.pem") }
            let (completed, change) = try authority([.exact("api.test")])
            XCTAssertEqual(change, .loaded, previous)
            XCTAssertEqual(completed.fingerprint, next.fingerprint, previous)
            XCTAssertEqual(try bytes("ca.pem"), nextPEM, previous)
            XCTAssertFalse(FileManager.default.fileExists(atPath: caDirectory + "/ca.pem.new"), previous)
        }
        _ = try LocalCA.loadOrCreate(directory: scratch.path + "/other", hosts: [.exact("api.test")], now: testNow)
        try scratch.write(try scratch.bytes(of: "other/ca.pem"), to: "forward-ca/ca.pem.new")
        try scratch.write(Array(try PrivateKey.generate(.ecP256).pemRepresentation().utf8), to: "forward-ca/ca.key")
        try chmod("ca.key", 0o600)
        XCTAssertThrowsError(try authority([.exact("api.test")])) { error in
            XCTAssertEqual(error as? LocalCAError, .keyMismatch(key: caDirectory + "/ca.key", certificate: caDirectory + "/ca.pem"))
        }
    }

    /// A new CA leaves no `.new` file behind.
    func testANewCALeavesNoPendingFile() throws {
        _ = try authority()
        _ = try authority([.exact("api.test")])
        let names = try FileManager.default.contentsOfDirectory(atPath: caDirectory).sorted()
        XCTAssertEqual(names, ["ca.key", "ca.pem"])
    }

    /// A symlinked ca.key is refused in words, not with the system's "Too many levels of
    /// symbolic links".
    func testASymlinkedKeyIsRefusedAsASymbolicLink() throws {
        _ = try authority()
        try FileManager.default.moveItem(atPath: caDirectory + "/ca.key", toPath: scratch.path + "/elsewhere.key")
        try FileManager.default.createSymbolicLink(atPath: caDirectory + "/ca.key", withDestinationPath: scratch.path + "/elsewhere.key")
        XCTAssertThrowsError(try authority()) { error in
            XCTAssertEqual(error as? LocalCAError, .unsafeKeyFile(
                path: caDirectory + "/ca.key", reason: "is a symbolic link (the CA's files must be regular files in its directory)"))
        }
    }

    /// A ca.pem past 64 KiB is refused, not read cut short (the certificate at its start would
    /// load, and the rest go unseen).
    func testACertificateFileLargerThan64KiBIsRefused() throws {
        _ = try authority()
        let padded = try bytes("ca.pem") + Array(String(repeating: "# padding\n", count: 7_000).utf8)
        try scratch.write(padded, to: "forward-ca/ca.pem")
        XCTAssertThrowsError(try authority()) { error in
            XCTAssertEqual(error as? LocalCAError, .unreadable(
                path: caDirectory + "/ca.pem", reason: "larger than 65536 bytes, so no CA certificate or key"))
        }
    }

    func testOneFileWithoutTheOtherIsRefused() throws {
        _ = try authority()
        try FileManager.default.removeItem(atPath: caDirectory + "/ca.pem")
        XCTAssertThrowsError(try authority()) { error in
            XCTAssertEqual(error as? LocalCAError, .incomplete(present: caDirectory + "/ca.key", missing: caDirectory + "/ca.pem"))
        }
    }

    func testADirectoryGroupOrOthersMayReadIsRefusedNamingItsMode() throws {
        _ = try authority()
        try chmod("", 0o750)
        XCTAssertThrowsError(try authority()) { error in
            XCTAssertEqual(error as? LocalCAError,
                           .unsafeDirectory(path: caDirectory, reason: "open to group or others (mode 750; use chmod 700)"))
            XCTAssertTrue("\(error)".contains(caDirectory))
        }
    }

    func testAKeyFileGroupOrOthersMayReadIsRefusedNamingItsMode() throws {
        _ = try authority()
        try chmod("ca.key", 0o640)
        XCTAssertThrowsError(try authority()) { error in
            XCTAssertEqual(error as? LocalCAError,
                           .unsafeKeyFile(path: caDirectory + "/ca.key", reason: "readable by group or others (mode 640; use chmod 600)"))
        }
    }

    func testNoErrorTextHoldsTheKey() throws {
        _ = try authority()
        let key = String(decoding: try bytes("ca.key"), as: UTF8.self)
        let body = key.split(separator: "\n").dropFirst().first.map(String.init) ?? ""
        try scratch.write(Array((key + "trailing").utf8).dropLast(40) + Array("\n".utf8), to: "forward-ca/ca.key")
        try chmod("ca.key", 0o600)
        XCTAssertThrowsError(try authority()) { error in
            XCTAssertFalse("\(error)".contains(body.prefix(20)), "\(error)")
        }
    }
}
