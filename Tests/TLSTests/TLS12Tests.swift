@testable import TLS
import XCTest

/// The paths TLS 1.2 takes differently from TLS 1.3: the session arrives inside the handshake
/// (before the pin check), and a refused client certificate fails the client's handshake.
final class TLS12Tests: PKITestCase {
    private func server(clientCertificates: TLSConfiguration.ClientCertificates = .notRequested) throws -> TLSConfiguration {
        let pki = try pki()
        let server = try TLSConfiguration.server(certificateFile: pki.localhost.certificate, keyFile: pki.localhost.key,
                                                 clientCertificates: clientCertificates)
        server.limitToTLS12()
        return server
    }

    func testHandshakeFedOneByteAtATimeCompletes() throws {
        let connection = InMemoryConnection(client: try .client(caFile: try pki().caCertificate), server: try server())
        connection.pump(pieceSize: 1)
        XCTAssertEqual(connection.client.state, .established)
        XCTAssertEqual(connection.server.state, .established)
        XCTAssertEqual(connection.client.protocolVersion, "TLSv1.2")
        XCTAssertEqual(connection.client.negotiatedProtocol, "http/1.1")
        connection.client.write(Array("ping".utf8))
        connection.pump(pieceSize: 1)
        XCTAssertEqual(String(decoding: connection.serverReceived.readableBytes, as: UTF8.self), "ping")
    }

    func testSecondConnectionResumesTheSession() throws {
        let pki = try pki()
        let client = try TLSConfiguration.client(caFile: pki.caCertificate,
                                                 pinnedSPKISHA256: [try pki.spkiSHA256(of: pki.localhost.certificate)])
        assertSecondConnectionResumes(client: client, server: try server())
    }

    func testConnectionRefusedByItsPinsLeavesNoSessionToResume() throws {
        let pki = try pki()
        let client = try TLSConfiguration.client(caFile: pki.caCertificate,
                                                 pinnedSPKISHA256: [try pki.spkiSHA256(of: pki.wrongName.certificate)])
        try assertRefusedByPinsWithoutResumption(client: client, server: try server())
    }

    func testServerRequiringACertificateFailsTheClientHandshake() throws {
        let pki = try pki()
        let connection = InMemoryConnection(client: try .client(caFile: pki.caCertificate),
                                            server: try server(clientCertificates: .required(caFile: pki.caCertificate)))
        connection.pump()
        XCTAssertEqual(connection.server.state, .failed(.handshakeFailed(reason: "peer did not return a certificate")))
        // The server's alert, in OpenSSL's words: 3.0 (Debian 12) calls it an SSLv3 alert, 3.5
        // (Debian 13) an SSL/TLS alert.
        let alert = ["sslv3 alert handshake failure", "ssl/tls alert handshake failure"]
        XCTAssertTrue(alert.map { TLSStatus.failed(.handshakeFailed(reason: $0)) }.contains(connection.client.state),
                      "\(connection.client.state)")
    }
}
