import Foundation

/// A certificate for a key a test generated, made by the `openssl` command in a temporary
/// directory, with the values a JWS header names it by as openssl computes them: each test then
/// checks the relay's own computation against a path that shares none of its code.
public struct IssuedCertificate: Sendable {
    public let pem: String
    /// base64url(SHA-256(DER)) and base64url(SHA-1(DER)): its `x5t#S256` and `x5t`.
    public let sha256Thumbprint: String
    public let sha1Thumbprint: String

    /// A self-signed certificate (valid for two days) for the private key in `keyPEM`.
    public static func selfSigned(forKey keyPEM: String, subject: String = "/CN=oauth-relay test client") throws -> IssuedCertificate {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("oauth-relay-certificate-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try keyPEM.write(toFile: directory + "/key.pem", atomically: true, encoding: .utf8)
        _ = try TestShell.run("openssl req -new -x509 -key key.pem -out cert.pem -days 2 -subj '\(subject)'", in: directory)
        func thumbprint(_ digest: String) throws -> String {
            let standard = try TestShell.run("openssl x509 -in cert.pem -outform der | openssl dgst -\(digest) -binary | openssl base64 -A",
                                     in: directory)
            return String(standard.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .trimmingCharacters(in: CharacterSet(charactersIn: "=\n")))
        }
        return IssuedCertificate(pem: try String(contentsOfFile: directory + "/cert.pem", encoding: .utf8),
                                 sha256Thumbprint: try thumbprint("sha256"), sha1Thumbprint: try thumbprint("sha1"))
    }
}
