import Crypto
import JSON

/// A public JSON Web Key (RFC 7517): RSA (`n`, `e`), EC P-256 (`x`, `y`) or OKP Ed25519 (`x`),
/// with the optional `kid`, `use` and `alg`. Private members (`d`, `p`, `q`, ...) and symmetric
/// keys (`oct`) are refused: a JWK read from a JWKS or a DPoP header must hold a public key only.
public struct JWK: Sendable, Hashable {
    public let components: PublicKeyComponents
    public var keyID: String?
    /// `sig` or `enc`; keys marked `enc` are never used to verify signatures.
    public var use: String?
    /// The one algorithm this key is meant for, as written (it may name one the relay lacks).
    public var algorithm: String?

    public init(components: PublicKeyComponents, keyID: String? = nil, use: String? = nil, algorithm: String? = nil) {
        self.components = components
        self.keyID = keyID
        self.use = use
        self.algorithm = algorithm
    }

    /// The JWK of `publicKey`.
    public init(publicKey: PublicKey, keyID: String? = nil, use: String? = nil, algorithm: JWSAlgorithm? = nil) throws(JOSEError) {
        do {
            self.init(components: try publicKey.components(), keyID: keyID, use: use, algorithm: algorithm?.rawValue)
        } catch {
            throw .crypto(error)
        }
    }

    /// Members only a private or symmetric key has (RFC 7518 §6.2.2, §6.3.2, §6.4; RFC 8037 §2).
    static let privateMembers = ["d", "p", "q", "dp", "dq", "qi", "oth", "k"]

    /// Reads a JWK from its JSON text.
    public init(json: [UInt8]) throws(JOSEError) {
        try self.init(object: try JSONValue.object(from: json, what: "the JWK"))
    }

    /// Reads a JWK from a parsed JSON object (a member of a JWKS `keys` array, a header's `jwk`).
    public init(object: JSONValue) throws(JOSEError) {
        guard object.members != nil else { throw .malformed("a JWK is not a JSON object") }
        func text(_ name: String) throws(JOSEError) -> String? {
            guard let value = object[name] else { return nil }
            guard let text = value.string else { throw .malformed("the JWK member \(name) is not a string") }
            return text
        }
        func bytes(_ name: String) throws(JOSEError) -> [UInt8] {
            guard let text = try text(name) else { throw .malformed("the JWK has no \(name)") }
            guard let bytes = Base64URL.decode(text), !bytes.isEmpty else { throw .malformed("the JWK member \(name) is not base64url") }
            return bytes
        }
        if Self.privateMembers.contains(where: { object[$0] != nil }) {
            throw .invalidKey("the JWK holds private or symmetric key material where a public key is expected")
        }
        let components: PublicKeyComponents
        switch try text("kty") {
        case "RSA":
            components = .rsa(modulus: try bytes("n"), exponent: try bytes("e"))
        case "EC":
            guard try text("crv") == "P-256" else { throw .invalidKey("only the EC curve P-256 is supported") }
            components = .ecP256(x: try bytes("x"), y: try bytes("y"))
        case "OKP":
            guard try text("crv") == "Ed25519" else { throw .invalidKey("only the OKP curve Ed25519 is supported") }
            components = .ed25519(x: try bytes("x"))
        case nil:
            throw .malformed("the JWK has no kty")
        case let other?:
            throw .invalidKey("unsupported key type \"\(JOSEError.shown(other))\"")
        }
        self.init(components: components, keyID: try text("kid"), use: try text("use"), algorithm: try text("alg"))
    }

    /// The key for OpenSSL; fails when the parameters do not make a valid key.
    public func publicKey() throws(JOSEError) -> PublicKey {
        do {
            return try PublicKey(components: components)
        } catch {
            throw .invalidKey(error.description)
        }
    }

    /// The required members only, in lexicographic order (RFC 7638 §3.2).
    private var requiredMembers: [JSONMember] {
        switch components {
        case .rsa(let modulus, let exponent):
            [JSONMember("e", .string(Base64URL.encode(exponent))), JSONMember("kty", .string("RSA")),
             JSONMember("n", .string(Base64URL.encode(modulus)))]
        case .ecP256(let x, let y):
            [JSONMember("crv", .string("P-256")), JSONMember("kty", .string("EC")),
             JSONMember("x", .string(Base64URL.encode(x))), JSONMember("y", .string(Base64URL.encode(y)))]
        case .ed25519(let x):
            [JSONMember("crv", .string("Ed25519")), JSONMember("kty", .string("OKP")), JSONMember("x", .string(Base64URL.encode(x)))]
        }
    }

    /// The RFC 7638 thumbprint: base64url of the SHA-256 of the required members, sorted, as
    /// compact JSON. DPoP's `jkt` and a good default `kid`.
    public var thumbprint: String {
        Base64URL.encode(SHA256.hash(Array(JSONValue.object(requiredMembers).serialized.utf8)))
    }

    /// The JWK as a JSON object: required members first, then `kid`, `use`, `alg` when set.
    public var jsonValue: JSONValue {
        var members = requiredMembers
        if let keyID { members.append(JSONMember("kid", .string(keyID))) }
        if let use { members.append(JSONMember("use", .string(use))) }
        if let algorithm { members.append(JSONMember("alg", .string(algorithm))) }
        return .object(members)
    }
}
