import JSON

/// The claims of a JWT (RFC 7519 §4.1) as an ordered JSON object, with typed access to the
/// registered claims the relay reads and writes. Other claims (`htm`, `ath`, `email`, ...) go
/// through the subscript.
public struct JWTClaims: Sendable, Equatable {
    public private(set) var members: [JSONMember]

    public init() {
        members = []
    }

    /// Reads the payload of a JWS as a claims set (a JSON object).
    public init(payload: [UInt8]) throws(JOSEError) {
        guard let members = try JSONValue.object(from: payload, what: "the JWT claims set").members else {
            throw .malformed("the JWT claims set is not a JSON object")
        }
        self.members = members
    }

    /// The claim `name`; setting nil removes it, setting a new one appends it.
    public subscript(name: String) -> JSONValue? {
        get { members.last { $0.name == name }?.value }
        set {
            if let newValue {
                if let index = members.firstIndex(where: { $0.name == name }) {
                    members[index].value = newValue
                } else {
                    members.append(JSONMember(name, newValue))
                }
            } else {
                members.removeAll { $0.name == name }
            }
        }
    }

    public var issuer: String? {
        get { self["iss"]?.string }
        set { self["iss"] = newValue.map(JSONValue.string) }
    }

    public var subject: String? {
        get { self["sub"]?.string }
        set { self["sub"] = newValue.map(JSONValue.string) }
    }

    /// `aud`, a string or an array of strings (RFC 7519 §4.1.3); written as a string when there
    /// is exactly one, as assertions (RFC 7523 §3) usually carry it.
    public var audience: [String] {
        get {
            switch self["aud"] {
            case .string(let one)?: [one]
            case .array(let values)?: values.compactMap(\.string)
            default: []
            }
        }
        set {
            self["aud"] = switch newValue.count {
            case 0: nil
            case 1: .string(newValue[0])
            default: .array(newValue.map(JSONValue.string))
            }
        }
    }

    /// `exp`, seconds since 1970 (fractions dropped).
    public var expiry: Int64? {
        get { self["exp"]?.integer }
        set { self["exp"] = newValue.map(JSONValue.integer) }
    }

    public var issuedAt: Int64? {
        get { self["iat"]?.integer }
        set { self["iat"] = newValue.map(JSONValue.integer) }
    }

    public var notBefore: Int64? {
        get { self["nbf"]?.integer }
        set { self["nbf"] = newValue.map(JSONValue.integer) }
    }

    public var jwtID: String? {
        get { self["jti"]?.string }
        set { self["jti"] = newValue.map(JSONValue.string) }
    }

    /// The OpenID Connect `nonce` (or the DPoP server nonce, RFC 9449 §8).
    public var nonce: String? {
        get { self["nonce"]?.string }
        set { self["nonce"] = newValue.map(JSONValue.string) }
    }

    /// The claims as compact JSON, in the order they were set.
    public var payload: [UInt8] { Array(JSONValue.object(members).serialized.utf8) }

    /// Checks the claims against `rules` at time `now` (seconds since 1970, from the caller's
    /// clock) with `leeway` seconds of tolerated clock skew either way.
    public func validate(_ rules: JWTValidationRules, now: Int64, leeway: Int64 = 60) throws(JOSEError) {
        func reject(_ problem: ClaimProblem) -> JOSEError { .claimRejected(problem) }
        // A claim present with the wrong type counts as broken, not as absent.
        for name in ["exp", "nbf", "iat"] where self[name] != nil && self[name]?.integer == nil {
            throw .malformed("the \(name) claim is not a number")
        }
        // Times from the token may be anything: the sums saturate instead of wrapping around.
        let leeway = max(0, leeway)
        if let expiry {
            let (limit, overflow) = expiry.addingReportingOverflow(leeway)
            guard overflow || now < limit else { throw reject(.expired) }
        } else if rules.requiresExpiry {
            throw reject(.missing("exp"))
        }
        if let notBefore, Self.subtracting(leeway, from: notBefore) > now { throw reject(.notYetValid) }
        if let issuedAt, Self.subtracting(leeway, from: issuedAt) > now { throw reject(.issuedInTheFuture) }
        if let expected = rules.issuer, issuer != expected { throw reject(.issuerMismatch(expected: expected)) }
        if let expected = rules.audience, !audience.contains(expected) { throw reject(.audienceMismatch(expected: expected)) }
        if let expected = rules.nonce {
            guard let nonce else { throw reject(.missing("nonce")) }
            guard ConstantTimeText.equal(nonce, expected) else { throw reject(.nonceMismatch) }
        }
    }

    /// `time - leeway`, held at `Int64.min` rather than wrapping.
    private static func subtracting(_ leeway: Int64, from time: Int64) -> Int64 {
        let (result, overflow) = time.subtractingReportingOverflow(leeway)
        return overflow ? .min : result
    }
}
