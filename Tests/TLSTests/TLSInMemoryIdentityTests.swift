import Crypto
import Foundation
import TLS
import XCTest

/// A server configuration built from a certificate and key in memory (the forward proxy's leaves)
/// completes the same handshake as one read from files.
final class TLSInMemoryIdentityTests: PKITestCase {
    private func identity() throws -> (certificate: X509Certificate, key: PrivateKey) {
        let pki = try pki()
        return (try X509Certificate(pem: String(contentsOfFile: pki.localhost.certificate, encoding: .utf8)),
                try PrivateKey(pem: String(contentsOfFile: pki.localhost.key, encoding: .utf8)))
    }

    func testInMemoryCertificateAndKeyCompleteAVerifiedHandshakeWithALPN() throws {
        let (certificate, key) = try identity()
        let server = try TLSConfiguration.server(certificateChain: [certificate], key: key)
        let connection = InMemoryConnection(client: try TLSConfiguration.client(caFile: try pki().caCertificate), server: server)
        connection.pump()
        XCTAssertEqual(connection.client.state, .established)
        XCTAssertEqual(connection.server.state, .established)
        XCTAssertEqual(connection.client.negotiatedProtocol, "http/1.1")
    }

    func testAKeyThatIsNotTheCertificatesIsRefused() throws {
        let (certificate, _) = try identity()
        let other = try PrivateKey.generate(.ecP256)
        XCTAssertThrowsError(try TLSConfiguration.server(certificateChain: [certificate], key: other)) { error in
            XCTAssertEqual((error as? TLSConfigurationError)?.setting, "key")
        }
    }

    func testAnEmptyChainIsRefused() throws {
        XCTAssertThrowsError(try TLSConfiguration.server(certificateChain: [], key: try PrivateKey.generate(.ecP256)))
    }
}
