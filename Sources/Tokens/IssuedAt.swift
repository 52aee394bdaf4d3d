#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The `iat` of the JWTs the relay signs (DPoP proofs, client assertions): the wall clock's
/// second, one back. Servers refuse a JWT issued in their future, some with no leeway at all
/// (Glewlwyd's DPoP check by default), and their clock can trail ours by a fraction of a second
/// even on one host: glibc's `time()` reads the coarse clock, up to a tick behind the precise one,
/// and a proof signed at x.001 s was refused by a server that still read x − 1. One second older
/// is well inside every server's window for a proof's or an assertion's age (RFC 9449 §11.1 leaves
/// that window to the server; the relay's assertions live 50 s).
public enum IssuedAt {
    public static func now() -> Int64 {
        Int64(time(nil)) - 1
    }
}
