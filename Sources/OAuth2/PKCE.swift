import Crypto
import JOSE
import SafeText

/// Proof Key for Code Exchange (RFC 7636) with the S256 method, the only one the relay sends:
/// the authorization request carries `code_challenge` = BASE64URL(SHA-256(verifier)), and the
/// code exchange the verifier itself, so a code intercepted on its way back to the relay is
/// useless without the verifier that never left it.
public struct PKCE: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// `code_challenge_method`.
    public static let method = "S256"
    /// The bytes drawn for a verifier: 32, whose base64url is 43 characters, RFC 7636 §4.1's
    /// shortest verifier and its recommended way of making one (256 bits of entropy).
    static let randomByteCount = 32

    /// `code_verifier`: 43 to 128 characters of `[A-Za-z0-9-._~]`.
    public let verifier: Secret

    /// A fresh verifier from `random` (a cryptographically secure generator in the relay).
    public init(random: inout some RandomNumberGenerator) {
        verifier = Secret.random(byteCount: Self.randomByteCount, using: &random)
    }

    /// A verifier given as text (RFC 7636 Appendix B's example, a stored login), checked
    /// against §4.1's length and alphabet.
    public init(verifier: String) throws(PKCEError) {
        guard (43...128).contains(verifier.utf8.count) else { throw .badLength(verifier.utf8.count) }
        guard verifier.utf8.allSatisfy(FormURLEncoding.isUnreserved) else { throw .badCharacter }
        self.verifier = Secret(verifier)
    }

    /// `code_challenge`: BASE64URL(SHA-256(ASCII(verifier))), RFC 7636 §4.2.
    public var challenge: String {
        Base64URL.encode(SHA256.hash(Array(verifier.value.utf8)))
    }

    public var description: String { "PKCE(\(Self.method), verifier …)" }

    public var debugDescription: String { description }

    public var customMirror: Mirror {
        Mirror(self, children: ["pkce": description], displayStyle: .struct)
    }
}

/// A code verifier that RFC 7636 §4.1 does not allow. The message never shows the verifier.
public enum PKCEError: Error, Sendable, Equatable, CustomStringConvertible {
    case badLength(Int)
    case badCharacter

    public var description: String {
        switch self {
        case .badLength(let count): "a PKCE code verifier has 43 to 128 characters, not \(count)"
        case .badCharacter: "a PKCE code verifier holds only letters, digits and - . _ ~"
        }
    }
}
