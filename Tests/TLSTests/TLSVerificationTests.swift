import TLS
import XCTest

/// What a client accepts: trust, names, validity dates, pins, and `insecureSkipVerify`.
final class TLSVerificationTests: PKITestCase {
    /// Connects a client with `client` to a server presenting `certificate`, and returns the
    /// client's state after the exchange.
    private func connect(_ client: TLSConfiguration, to certificate: TestPKI.Identity,
                         host: String = "localhost") throws -> InMemoryConnection {
        let server = try TLSConfiguration.server(certificateFile: certificate.certificate, keyFile: certificate.key)
        let connection = InMemoryConnection(client: client, server: server, host: host)
        connection.pump()
        return connection
    }

    func testCertificateFromTheConfiguredCAIsAccepted() throws {
        let pki = try pki()
        let connection = try connect(try .client(caFile: pki.caCertificate), to: pki.localhost)
        XCTAssertEqual(connection.client.state, .established)
    }

    func testConfiguredCAAloneIsEnoughWithoutTheSystemStore() throws {
        let pki = try pki()
        let client = try TLSConfiguration.client(caFile: pki.caCertificate, trustSystemRoots: false)
        XCTAssertEqual(try connect(client, to: pki.localhost).client.state, .established)
    }

    func testUnknownCAIsRefused() throws {
        let pki = try pki()
        let connection = try connect(try .client(), to: pki.localhost)
        XCTAssertEqual(connection.client.state,
                       .failed(.untrustedCertificate(reason: "unable to get local issuer certificate")))
        XCTAssertEqual(connection.server.state, .failed(.handshakeFailed(reason: "tlsv1 alert unknown ca")),
                       "the client told the server why")
    }

    func testSelfSignedCertificateIsRefused() throws {
        let pki = try pki()
        let connection = try connect(try .client(), to: pki.ca)
        XCTAssertEqual(connection.client.state, .failed(.untrustedCertificate(reason: "self-signed certificate")))
    }

    func testWrongNameIsRefused() throws {
        let pki = try pki()
        let connection = try connect(try .client(caFile: pki.caCertificate), to: pki.wrongName)
        XCTAssertEqual(connection.client.state, .failed(.nameMismatch(expected: "localhost")))
        XCTAssertEqual(TLSError.nameMismatch(expected: "localhost").description,
                       "certificate is not valid for \"localhost\" (name mismatch)")
    }

    func testServerNameReplacesTheURLHostForSNIAndTheCheck() throws {
        let pki = try pki()
        let client = try TLSConfiguration.client(caFile: pki.caCertificate, serverName: "wrong.example")
        XCTAssertEqual(try connect(client, to: pki.wrongName).client.state, .established)
        XCTAssertEqual(try connect(client, to: pki.localhost).client.state,
                       .failed(.nameMismatch(expected: "wrong.example")))
    }

    func testIPAddressIsCheckedAgainstTheAddressesOfTheCertificate() throws {
        let pki = try pki()
        let client = try TLSConfiguration.client(caFile: pki.caCertificate)
        XCTAssertEqual(try connect(client, to: pki.localhost, host: "127.0.0.1").client.state, .established)
        XCTAssertEqual(try connect(client, to: pki.localhost, host: "127.0.0.2").client.state,
                       .failed(.nameMismatch(expected: "127.0.0.2")))
        XCTAssertEqual(try connect(client, to: pki.localhost, host: "[::1]").client.state,
                       .failed(.nameMismatch(expected: "::1")))
    }

    func testExpiredCertificateIsRefused() throws {
        let pki = try pki()
        let connection = try connect(try .client(caFile: pki.caCertificate), to: pki.expired)
        XCTAssertEqual(connection.client.state, .failed(.expired))
    }

    func testNotYetValidCertificateIsRefused() throws {
        let pki = try pki()
        let connection = try connect(try .client(caFile: pki.caCertificate), to: pki.notYetValid)
        XCTAssertEqual(connection.client.state, .failed(.notYetValid))
    }

    func testPinOfTheServerKeyIsAccepted() throws {
        let pki = try pki()
        let client = try TLSConfiguration.client(caFile: pki.caCertificate,
                                                 pinnedSPKISHA256: [try pki.spkiSHA256(of: pki.localhost.certificate)])
        XCTAssertEqual(try connect(client, to: pki.localhost).client.state, .established)
    }

    func testPinOfTheCAKeyIsAccepted() throws {
        let pki = try pki()
        let client = try TLSConfiguration.client(caFile: pki.caCertificate,
                                                 pinnedSPKISHA256: [try pki.spkiSHA256(of: pki.caCertificate)])
        XCTAssertEqual(try connect(client, to: pki.localhost).client.state, .established)
    }

    func testPinOfACertificateSentOutsideTheVerifiedChainIsRefused() throws {
        let pki = try pki()
        // The server sends the wrong-name certificate after its own: a certificate anyone could
        // attach, which the verified chain (localhost, then the CA) does not contain.
        let decorated = pki.directory + "/decorated-chain.pem"
        try (String(contentsOfFile: pki.localhost.certificate, encoding: .utf8)
            + String(contentsOfFile: pki.wrongName.certificate, encoding: .utf8))
            .write(toFile: decorated, atomically: true, encoding: .utf8)
        let client = try TLSConfiguration.client(caFile: pki.caCertificate,
                                                 pinnedSPKISHA256: [try pki.spkiSHA256(of: pki.wrongName.certificate)])
        let connection = try connect(client, to: TestPKI.Identity(certificate: decorated, key: pki.localhost.key))
        XCTAssertEqual(connection.client.state, .failed(.pinMismatch))
    }

    func testPinMismatchIsRefused() throws {
        let pki = try pki()
        let client = try TLSConfiguration.client(caFile: pki.caCertificate,
                                                 pinnedSPKISHA256: [try pki.spkiSHA256(of: pki.wrongName.certificate)])
        XCTAssertEqual(try connect(client, to: pki.localhost).client.state, .failed(.pinMismatch))
    }

    func testConnectionRefusedByItsPinsLeavesNoSessionToResume() throws {
        let pki = try pki()
        let client = try TLSConfiguration.client(caFile: pki.caCertificate,
                                                 pinnedSPKISHA256: [try pki.spkiSHA256(of: pki.wrongName.certificate)])
        let server = try TLSConfiguration.server(certificateFile: pki.localhost.certificate, keyFile: pki.localhost.key)
        try assertRefusedByPinsWithoutResumption(client: client, server: server)
    }

    func testInsecureSkipVerifyAcceptsAnUnknownCAAndAnyName() throws {
        let pki = try pki()
        let client = try TLSConfiguration.client(insecureSkipVerify: true)
        XCTAssertEqual(try connect(client, to: pki.localhost).client.state, .established)
        XCTAssertEqual(try connect(client, to: pki.wrongName).client.state, .established)
        XCTAssertEqual(try connect(client, to: pki.expired).client.state, .established)
    }

    func testPinsWithInsecureSkipVerifyMatchOnlyTheLeaf() throws {
        let pki = try pki()
        let leafPinned = try TLSConfiguration.client(
            pinnedSPKISHA256: [try pki.spkiSHA256(of: pki.localhost.certificate)], insecureSkipVerify: true)
        XCTAssertEqual(try connect(leafPinned, to: pki.localhost).client.state, .established)
        let caPinned = try TLSConfiguration.client(
            pinnedSPKISHA256: [try pki.spkiSHA256(of: pki.caCertificate)], insecureSkipVerify: true)
        XCTAssertEqual(try connect(caPinned, to: pki.localhostWithCA).client.state, .failed(.pinMismatch),
                       "an unverified chain proves nothing about the CA the server sends along")
    }

    func testMissingCAFileIsAConfigurationErrorNamingTheSetting() throws {
        let pki = try pki()
        XCTAssertThrowsError(try TLSConfiguration.client(caFile: pki.directory + "/missing.pem")) { error in
            let error = error as? TLSConfigurationError
            XCTAssertEqual(error?.setting, "caFile")
            XCTAssertTrue(error?.problem.hasPrefix("cannot load CA certificates from \(pki.directory)/missing.pem") == true,
                          "\(String(describing: error))")
        }
    }

    func testKeyOfAnotherCertificateIsAConfigurationError() throws {
        let pki = try pki()
        XCTAssertThrowsError(try TLSConfiguration.client(clientCertificateFile: pki.client.certificate,
                                                         clientKeyFile: pki.localhost.key)) { error in
            XCTAssertEqual((error as? TLSConfigurationError)?.setting, "clientKey")
        }
    }

    func testPinOfTheWrongLengthIsAConfigurationError() throws {
        XCTAssertThrowsError(try TLSConfiguration.client(pinnedSPKISHA256: [[1, 2, 3]])) { error in
            XCTAssertEqual((error as? TLSConfigurationError)?.setting, "pins[0]")
        }
    }
}
