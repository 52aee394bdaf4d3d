import Crypto

/// Why the forward proxy's CA cannot be used. The words name files, modes and hosts, never the
/// contents of a file (the key's least of all).
public enum LocalCAError: Error, Equatable, Sendable, CustomStringConvertible {
    /// No host to sign for: a CA constrained to nothing would be refused by every client.
    case noHosts
    /// A host pattern that is no DNS name (an IP address, or a character a name cannot hold).
    case notAHostName(String)
    /// The directory is not one only this user can enter, read and write.
    case unsafeDirectory(path: String, reason: String)
    /// The key file is not one only this user can read.
    case unsafeKeyFile(path: String, reason: String)
    /// One of the two files exists without the other: which to keep is the operator's call.
    case incomplete(present: String, missing: String)
    /// A file that holds no certificate or key the CA can use (corrupt, another kind of key).
    case unreadable(path: String, reason: String)
    /// The key is not the certificate's.
    case keyMismatch(key: String, certificate: String)
    /// A system call on a file or directory failed.
    case io(path: String, operation: String, reason: String)
    /// OpenSSL failed where it should not (no entropy, out of memory).
    case crypto(CryptoError)

    public var description: String {
        switch self {
        case .noHosts:
            "no route names a host to intercept (routes' match.host), so the forward proxy's CA would sign for nothing"
        case .notAHostName(let host):
            "\"\(host)\" is not a DNS name the CA can be constrained to"
        case .unsafeDirectory(let path, let reason):
            "the CA directory \(path) cannot be used: \(reason)"
        case .unsafeKeyFile(let path, let reason):
            "the CA key \(path) cannot be used: \(reason)"
        case .incomplete(let present, let missing):
            "\(present) exists but \(missing) does not; remove \(present) to issue a new CA, or restore \(missing)"
        case .unreadable(let path, let reason):
            "\(path) cannot be read: \(reason); nothing was changed (remove ca.pem and ca.key to issue a new CA)"
        case .keyMismatch(let key, let certificate):
            "\(key) is not the key of \(certificate); nothing was changed (remove both to issue a new CA)"
        case .io(let path, let operation, let reason):
            "\(operation) \(path): \(reason)"
        case .crypto(let error):
            "the CA: \(error)"
        }
    }
}
