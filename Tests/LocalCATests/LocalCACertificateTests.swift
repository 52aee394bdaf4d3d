import COpenSSL
import Crypto
@testable import LocalCA
import XCTest

/// The CA's certificate and its leaves, read back and verified by OpenSSL: the extensions are
/// there and critical where they must be, a leaf for a permitted host verifies, and a leaf the
/// CA key signs for anything else is refused by the name constraints.
final class LocalCACertificateTests: CADirectoryTestCase {
    func testTheCAHasCriticalBasicConstraintsKeyUsageAndNameConstraints() throws {
        let (ca, _) = try authority()
        let certificate = ca.certificate
        XCTAssertEqual(OpenSSLChecks.isCritical(certificate, NID_basic_constraints), true)
        XCTAssertEqual(OpenSSLChecks.isCritical(certificate, NID_key_usage), true)
        XCTAssertEqual(OpenSSLChecks.isCritical(certificate, NID_name_constraints), true)
        XCTAssertEqual(OpenSSLChecks.isCritical(certificate, NID_subject_key_identifier), false)
        XCTAssertEqual(X509_check_ca(certificate.pointer), 1)
        XCTAssertEqual(X509_get_pathlen(certificate.pointer), 0)
        XCTAssertEqual(X509_get_key_usage(certificate.pointer), UInt32(KU_KEY_CERT_SIGN | KU_CRL_SIGN))
        XCTAssertEqual(certificate.permittedDNSNames, [".example.com", "api.test"])
    }

    func testTheCAMaySignForTLSServersOnly() throws {
        let (ca, _) = try authority()
        XCTAssertEqual(OpenSSLChecks.isCritical(ca.certificate, NID_ext_key_usage), false)
        XCTAssertEqual(X509_get_extended_key_usage(ca.certificate.pointer), UInt32(XKU_SSL_SERVER))
    }

    /// A stolen CA key cannot make an S/MIME or a TLS client certificate anyone accepts: the CA's
    /// extended key usage refuses the purpose, and its name constraints any e-mail address or
    /// URI outside `.invalid`, even in a server certificate for a permitted host.
    func testLeavesForOtherUsesOrNamingAnAddressOrURISignedByTheCAKeyAreRefused() throws {
        let (ca, _) = try authority()
        func leaf(_ usage: String, _ names: String) throws -> X509Certificate {
            let key = try PrivateKey.generate(.ecP256)
            let fields = CertificateFields(commonName: "other use", serialNumber: [3], notBefore: testNow - 60, notAfter: testNow + 3_600,
                                           extensions: [CertificateExtension(.basicConstraints, "critical,CA:FALSE"),
                                                        CertificateExtension(.extendedKeyUsage, usage),
                                                        CertificateExtension(.subjectAltName, names)])
            return try X509Certificate.issue(fields, subjectKey: key.publicKey, issuer: ca.certificate, issuerKey: ca.key)
        }
        let smime = try leaf("emailProtection", "email:alice@example.com")
        XCTAssertEqual(OpenSSLChecks.verify(smime, under: ca.certificate, host: nil, at: testNow, purpose: X509_PURPOSE_SMIME_SIGN),
                       X509_V_ERR_INVALID_PURPOSE)
        let client = try leaf("clientAuth", "DNS:api.test")
        XCTAssertEqual(OpenSSLChecks.verify(client, under: ca.certificate, host: nil, at: testNow, purpose: X509_PURPOSE_SSL_CLIENT),
                       X509_V_ERR_INVALID_PURPOSE)
        for names in ["DNS:api.test,email:alice@example.com", "DNS:api.test,URI:https://www.example.org/"] {
            let server = try leaf("serverAuth", names)
            let result = OpenSSLChecks.verify(server, under: ca.certificate, host: "api.test", at: testNow)
            XCTAssertEqual(result, X509_V_ERR_PERMITTED_VIOLATION, "\(names): \(OpenSSLChecks.text(result))")
        }
        let server = try leaf("serverAuth", "DNS:api.test")
        XCTAssertEqual(OpenSSLChecks.verify(server, under: ca.certificate, host: "api.test", at: testNow), X509_V_OK)
    }

    func testTheCALivesTenYearsBackdatedAnHour() throws {
        let (ca, _) = try authority()
        XCTAssertEqual(ca.certificate.notBefore, testNow - 3_600)
        XCTAssertEqual(ca.certificate.notAfter, testNow + 3_650 * 86_400)
    }

    func testALeafForAPermittedHostVerifiesAsATLSServerForThatHost() throws {
        let (ca, _) = try authority()
        for host in ["api.test", "a.example.com", "a.b.example.com"] {
            let leaf = try ca.issueLeaf(forHost: host, now: testNow).certificate
            let result = OpenSSLChecks.verify(leaf, under: ca.certificate, host: host, at: testNow)
            XCTAssertEqual(result, X509_V_OK, "\(host): \(OpenSSLChecks.text(result))")
        }
    }

    func testALeafIsAServerCertificateForExactlyItsHostForADayAtMost() throws {
        let (ca, _) = try authority()
        let leaf = try ca.issueLeaf(forHost: "api.test", now: testNow).certificate
        XCTAssertEqual(leaf.notBefore, testNow - 300)
        XCTAssertEqual(leaf.notAfter - leaf.notBefore, 86_400, "valid a day in all, back-dating included")
        XCTAssertEqual(OpenSSLChecks.isCritical(leaf, NID_basic_constraints), true)
        XCTAssertEqual(OpenSSLChecks.isCritical(leaf, NID_key_usage), true)
        XCTAssertEqual(OpenSSLChecks.isCritical(leaf, NID_ext_key_usage), false)
        XCTAssertEqual(OpenSSLChecks.isCritical(leaf, NID_authority_key_identifier), false)
        XCTAssertEqual(X509_check_ca(leaf.pointer), 0)
        XCTAssertEqual(X509_get_extended_key_usage(leaf.pointer), UInt32(XKU_SSL_SERVER))
        XCTAssertEqual(OpenSSLChecks.verify(leaf, under: ca.certificate, host: "a.api.test", at: testNow), X509_V_ERR_HOSTNAME_MISMATCH)
        XCTAssertEqual(OpenSSLChecks.verify(leaf, under: ca.certificate, host: "api.test", at: testNow + 86_101), X509_V_ERR_CERT_HAS_EXPIRED)
    }

    func testALeafNeverOutlivesTheCA() {
        let fields = CertificateProfiles.leaf(host: "api.test", serialNumber: [1], now: 1_000, authorityNotAfter: 5_000)
        XCTAssertEqual(fields.notAfter, 5_000)
    }

    func testAHostTooLongForACommonNameIsInACriticalSubjectAltNameAlone() throws {
        let host = String(repeating: "a", count: 60) + ".example.com"
        let fields = CertificateProfiles.leaf(host: host, serialNumber: [1], now: testNow, authorityNotAfter: testNow + 10 * 86_400)
        XCTAssertNil(fields.commonName)
        XCTAssertTrue(fields.extensions.contains(CertificateExtension(.subjectAltName, "critical,DNS:" + host)))
        let (ca, _) = try authority()
        let leaf = try ca.issueLeaf(forHost: host, now: testNow).certificate
        XCTAssertEqual(OpenSSLChecks.isCritical(leaf, NID_subject_alt_name), true)
        XCTAssertEqual(OpenSSLChecks.verify(leaf, under: ca.certificate, host: host, at: testNow), X509_V_OK)
    }

    /// The point of the constraints: the CA key itself cannot make a certificate clients accept
    /// for another host.
    func testALeafForAHostOutsideTheConstraintsSignedByTheCAKeyIsRefused() throws {
        let (ca, _) = try authority()
        for host in ["www.google.com", "example.com", "evil-example.com", "test", "api.test.evil.com"] {
            let leaf = try ca.issueLeaf(forHost: host, now: testNow).certificate
            let result = OpenSSLChecks.verify(leaf, under: ca.certificate, host: host, at: testNow)
            XCTAssertEqual(result, X509_V_ERR_PERMITTED_VIOLATION, "\(host): \(OpenSSLChecks.text(result))")
        }
    }

    func testALeafForAnIPAddressSignedByTheCAKeyIsRefusedByTheExcludedRanges() throws {
        let (ca, _) = try authority()
        for address in ["127.0.0.1", "::1"] {
            let key = try PrivateKey.generate(.ecP256)
            let fields = CertificateFields(commonName: "address", serialNumber: [2], notBefore: testNow - 60, notAfter: testNow + 3_600,
                                           extensions: [CertificateExtension(.basicConstraints, "critical,CA:FALSE"),
                                                        CertificateExtension(.extendedKeyUsage, "serverAuth"),
                                                        CertificateExtension(.subjectAltName, "IP:" + address)])
            let leaf = try X509Certificate.issue(fields, subjectKey: key.publicKey, issuer: ca.certificate, issuerKey: ca.key)
            let result = OpenSSLChecks.verify(leaf, under: ca.certificate, host: nil, at: testNow)
            XCTAssertEqual(result, X509_V_ERR_EXCLUDED_VIOLATION, "\(address): \(OpenSSLChecks.text(result))")
        }
    }

    func testTheCAsPEMReadsBackToTheSameCertificate() throws {
        let (ca, _) = try authority()
        let again = try X509Certificate(pem: try ca.certificate.pemRepresentation())
        XCTAssertEqual(again.der, ca.certificate.der)
        XCTAssertEqual(again.permittedDNSNames, ca.certificate.permittedDNSNames)
    }
}

extension LocalCACertificateTests {
    /// A certificate just signed is the one a peer parses from its DER: OpenSSL's cached hash of
    /// it (`X509_cmp` compares it first) was computed after the signature, not before.
    func testALeafJustSignedComparesEqualToItsDERReadBack() throws {
        let (ca, _) = try authority()
        let leaf = try ca.issueLeaf(forHost: "api.test", now: testNow).certificate
        let parsed = try X509Certificate(der: leaf.der)
        XCTAssertEqual(X509_cmp(leaf.pointer, parsed.pointer), 0)
        XCTAssertEqual(parsed.der, leaf.der)
    }
}
