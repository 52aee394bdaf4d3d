import JSON

/// The protected header of a JWS (RFC 7515 §4): the members the relay reads and writes.
/// Members it does not know are kept in `otherMembers` when reading and ignored, except `crit`,
/// which is refused (§4.1.11: a recipient must understand every critical extension).
public struct JWSHeader: Sendable, Equatable {
    public var algorithm: JWSAlgorithm
    /// `typ`: `JWT`, `dpop+jwt`, ...
    public var type: String?
    public var keyID: String?
    /// `x5t#S256` (§4.1.8): the base64url SHA-256 thumbprint of the signer's certificate (DER).
    public var x509SHA256Thumbprint: String?
    /// `x5t` (§4.1.7): the base64url SHA-1 thumbprint of the signer's certificate (DER).
    public var x509SHA1Thumbprint: String?
    /// `x5c` (§4.1.6): the signer's certificate chain, leaf first, each its DER in standard
    /// (not URL-safe) base64 with padding.
    public var x509Chain: [String]?
    /// A public key carried in the header (DPoP proofs, RFC 9449 §4.2).
    public var jwk: JWK?
    public var otherMembers: [JSONMember]

    public init(algorithm: JWSAlgorithm, type: String? = nil, keyID: String? = nil, jwk: JWK? = nil) {
        self.algorithm = algorithm
        self.type = type
        self.keyID = keyID
        self.jwk = jwk
        self.otherMembers = []
    }

    /// Reads the decoded header segment.
    init(json: [UInt8]) throws(JOSEError) {
        let object = try JSONValue.object(from: json, what: "the JWS header")
        guard let name = object["alg"]?.string else { throw .malformed("the JWS header has no alg string") }
        guard object["crit"] == nil else { throw .unsupportedCriticalHeader }
        self.init(algorithm: try JWSAlgorithm(named: name))
        func text(_ member: String) throws(JOSEError) -> String? {
            guard let value = object[member] else { return nil }
            guard let text = value.string else { throw .malformed("the JWS header member \(member) is not a string") }
            return text
        }
        type = try text("typ")
        keyID = try text("kid")
        x509SHA256Thumbprint = try text("x5t#S256")
        x509SHA1Thumbprint = try text("x5t")
        if let chain = object["x5c"] {
            guard let texts = chain.strings, !texts.isEmpty else {
                throw .malformed("the JWS header member x5c is not a non-empty array of strings")
            }
            x509Chain = texts
        }
        if let key = object["jwk"] { jwk = try JWK(object: key) }
        let known: Set = ["alg", "typ", "kid", "x5t#S256", "x5t", "x5c", "jwk"]
        otherMembers = object.members!.filter { !known.contains($0.name) }
    }

    /// `typ`, `alg`, `kid`, `x5t#S256`, `x5t`, `x5c`, `jwk` in that order, then any other members.
    public var jsonValue: JSONValue {
        var members: [JSONMember] = []
        if let type { members.append(JSONMember("typ", .string(type))) }
        members.append(JSONMember("alg", .string(algorithm.rawValue)))
        if let keyID { members.append(JSONMember("kid", .string(keyID))) }
        if let x509SHA256Thumbprint { members.append(JSONMember("x5t#S256", .string(x509SHA256Thumbprint))) }
        if let x509SHA1Thumbprint { members.append(JSONMember("x5t", .string(x509SHA1Thumbprint))) }
        if let x509Chain { members.append(JSONMember("x5c", .array(x509Chain.map(JSONValue.string)))) }
        if let jwk { members.append(JSONMember("jwk", jwk.jsonValue)) }
        return .object(members + otherMembers)
    }
}
