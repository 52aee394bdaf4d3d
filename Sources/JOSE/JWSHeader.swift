import JSON

/// The protected header of a JWS (RFC 7515 §4): the members the relay reads and writes.
/// Members it does not know are kept in `otherMembers` when reading and ignored, except `crit`,
/// which is refused (§4.1.11: a recipient must understand every critical extension).
public struct JWSHeader: Sendable, Equatable {
    public var algorithm: JWSAlgorithm
    /// `typ`: `JWT`, `dpop+jwt`, ...
    public var type: String?
    public var keyID: String?
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
        if let key = object["jwk"] { jwk = try JWK(object: key) }
        let known: Set = ["alg", "typ", "kid", "jwk"]
        otherMembers = object.members!.filter { !known.contains($0.name) }
    }

    /// `typ`, `alg`, `kid`, `jwk` in that order, then any other members.
    public var jsonValue: JSONValue {
        var members: [JSONMember] = []
        if let type { members.append(JSONMember("typ", .string(type))) }
        members.append(JSONMember("alg", .string(algorithm.rawValue)))
        if let keyID { members.append(JSONMember("kid", .string(keyID))) }
        if let jwk { members.append(JSONMember("jwk", jwk.jsonValue)) }
        return .object(members + otherMembers)
    }
}
