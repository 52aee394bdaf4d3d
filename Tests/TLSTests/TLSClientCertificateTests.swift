import TLS
import XCTest

/// Mutual TLS: a client presenting a certificate, and servers that ask for one.
final class TLSClientCertificateTests: PKITestCase {
    private func server(_ clientCertificates: (String) -> TLSConfiguration.ClientCertificates) throws -> TLSConfiguration {
        let pki = try pki()
        return try .server(certificateFile: pki.localhost.certificate, keyFile: pki.localhost.key,
                           clientCertificates: clientCertificates(pki.caCertificate))
    }

    private func client(withCertificate: Bool) throws -> TLSConfiguration {
        let pki = try pki()
        return withCertificate
            ? try .client(caFile: pki.caCertificate, clientCertificateFile: pki.client.certificate, clientKeyFile: pki.client.key)
            : try .client(caFile: pki.caCertificate)
    }

    func testServerSeesTheClientCertificate() throws {
        let connection = InMemoryConnection(client: try client(withCertificate: true),
                                            server: try server { .required(caFile: $0) })
        connection.pump()
        XCTAssertEqual(connection.client.state, .established)
        XCTAssertEqual(connection.server.state, .established)
        XCTAssertEqual(connection.server.peerCertificateSubject, "CN=relay-client")
        XCTAssertEqual(connection.client.peerCertificateSubject, "CN=localhost")
    }

    func testServerRequiringACertificateRefusesAClientWithout() throws {
        let connection = InMemoryConnection(client: try client(withCertificate: false),
                                            server: try server { .required(caFile: $0) })
        connection.pump()
        XCTAssertEqual(connection.server.state, .failed(.handshakeFailed(reason: "peer did not return a certificate")))
        // TLS 1.3: the client finished its part of the handshake before the server refused it,
        // and learns of it from the server's alert.
        XCTAssertEqual(connection.client.state, .failed(.protocolError(reason: "tlsv13 alert certificate required")))
    }

    func testServerWithOptionalCertificatesAcceptsAClientWithout() throws {
        let connection = InMemoryConnection(client: try client(withCertificate: false),
                                            server: try server { .optional(caFile: $0) })
        connection.pump()
        XCTAssertEqual(connection.server.state, .established)
        XCTAssertNil(connection.server.peerCertificateSubject)
    }

    func testClientCertificateFromAnUnknownCAIsRefused() throws {
        let pki = try pki()
        // The server trusts only a CA that did not sign the client's certificate: its own leaf.
        let server = try TLSConfiguration.server(certificateFile: pki.localhost.certificate, keyFile: pki.localhost.key,
                                                 clientCertificates: .optional(caFile: pki.localhost.certificate))
        let connection = InMemoryConnection(client: try client(withCertificate: true), server: server)
        connection.pump()
        // The client sends its CA along (OpenSSL completes the chain from the client's trust
        // store), which the server does not trust either.
        XCTAssertEqual(connection.server.state,
                       .failed(.untrustedCertificate(reason: "self-signed certificate in certificate chain")))
    }
}
