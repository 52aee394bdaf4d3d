import JOSE
import JSON

/// An introspection endpoint's answer about one token (RFC 7662 §2.2), read strictly: the body
/// is one JSON object of at most `maximumBodyBytes` bytes with no member named twice; the token
/// is active only when `active` is the JSON literal `true` (`false` says inactive; a missing
/// `active`, `"true"` or `1` make the answer unusable, not a token); and each member the relay
/// reads has its type (`exp`, `iat`, `nbf` numbers; `scope`, `client_id`, `username`, `sub`,
/// `iss`, `token_type`, `jti` strings; `aud` a string or an array of strings; `cnf` an object
/// whose `jkt` is a string). A member that is JSON `null` counts as absent. Nothing else of an
/// inactive answer is read (§2.2: the server should say no more).
///
/// Whether the token is good for a route is `verdict(_:presentedAs:now:)`; how long the answer
/// may be reused, `reusableSeconds(now:maximumSeconds:)`.
public enum IntrospectionResponse: Sendable, Equatable {
    /// `"active": false`: expired, revoked, unknown, or not this client's to ask about.
    case inactive
    /// `"active": true`, and what the answer says of the token.
    case active(IntrospectedToken)

    /// A longer body is refused: DOT's answers are about 200 bytes, Keycloak's with every claim
    /// a few kilobytes.
    public static let maximumBodyBytes = 32 * 1024

    /// How long an active token's answer is reused at most, by default, whatever its `exp`
    /// says: an opaque token can be revoked, and the relay learns of it only by asking again.
    public static let defaultMaximumReuseSeconds: Int64 = 300

    /// Why a body is not a usable introspection answer (`reason` names the member, never a value).
    struct Invalid: Error {
        let reason: String
    }

    init(body: [UInt8]) throws(Invalid) {
        guard body.count <= Self.maximumBodyBytes else {
            throw Invalid(reason: "the body is larger than \(Self.maximumBodyBytes) bytes")
        }
        guard let value = try? JSONValue(parsing: body), let members = value.members else {
            throw Invalid(reason: "the body is not a JSON object")
        }
        var names = Set<String>()
        for member in members where !names.insert(member.name).inserted {
            throw Invalid(reason: "the member \(member.name) appears more than once")
        }
        switch value["active"] {
        case .bool(true)?:
            // Read once more as claims (no name repeats, so nothing is lost): building them member
            // by member would cost a search of those already set for each.
            guard let claims = try? JWTClaims(payload: body) else { throw Invalid(reason: "the body is not a JSON object") }
            self = .active(try IntrospectedToken(claims: claims))
        case .bool(false)?:
            self = .inactive
        case nil:
            throw Invalid(reason: "there is no active member")
        default:
            throw Invalid(reason: "active is not a JSON boolean")
        }
    }

    /// How many seconds from `now` this answer may be used again for the same token: an active
    /// token's until its `exp` (none left once it has passed), never more than `maximumSeconds`
    /// (nor, without an `exp`, less); an inactive token's not at all (the next request asks
    /// again, and concurrent ones share one question: `Introspections`).
    public func reusableSeconds(now: Int64, maximumSeconds: Int64 = defaultMaximumReuseSeconds) -> Int64 {
        let maximum = max(0, maximumSeconds)
        guard case .active(let token) = self else { return 0 }
        guard let expiry = token.expiry else { return maximum }
        let (left, overflow) = expiry.subtractingReportingOverflow(now)
        if overflow { return expiry > now ? maximum : 0 }
        return min(max(0, left), maximum)
    }
}

/// What an active token's introspection answer says of it.
public struct IntrospectedToken: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// `scope`, split at spaces.
    public let scopes: [String]
    public let clientID: String?
    public let username: String?
    public let tokenType: String?
    /// `exp`, `iat`, `nbf`: seconds since 1970 (fractions dropped).
    public let expiry: Int64?
    public let issuedAt: Int64?
    public let notBefore: Int64?
    public let subject: String?
    /// `aud`, a string or an array of strings; empty when absent.
    public let audience: [String]
    public let issuer: String?
    public let jwtID: String?
    /// `cnf.jkt` (RFC 9449 §6.2): the thumbprint of the DPoP key the token is bound to.
    public let boundKeyThumbprint: String?
    /// `cnf` is there without a `jkt` (`{"x5t#S256": ...}`, RFC 8705): the token is bound by a
    /// means the relay cannot check, so it is refused (`IntrospectionRefusal.uncheckableBinding`).
    public let hasUncheckableBinding: Bool
    /// Every member of the answer, in order: what `claimHeaders` may pass on (`email`, `groups`).
    public let claims: JWTClaims

    init(claims: JWTClaims) throws(IntrospectionResponse.Invalid) {
        func present(_ name: String) -> JSONValue? {
            guard let value = claims[name], value != .null else { return nil }
            return value
        }
        func text(_ name: String) throws(IntrospectionResponse.Invalid) -> String? {
            guard let value = present(name) else { return nil }
            guard let text = value.string else { throw IntrospectionResponse.Invalid(reason: "\(name) is not a string") }
            return text
        }
        func time(_ name: String) throws(IntrospectionResponse.Invalid) -> Int64? {
            guard let value = present(name) else { return nil }
            guard let seconds = value.integer else { throw IntrospectionResponse.Invalid(reason: "\(name) is not a number") }
            return seconds
        }
        scopes = try text("scope").map { $0.split(separator: " ").map(String.init) } ?? []
        clientID = try text("client_id")
        username = try text("username")
        tokenType = try text("token_type")
        expiry = try time("exp")
        issuedAt = try time("iat")
        notBefore = try time("nbf")
        subject = try text("sub")
        issuer = try text("iss")
        jwtID = try text("jti")
        switch present("aud") {
        case nil: audience = []
        case .string(let one)?: audience = [one]
        case let value?:
            guard let many = value.strings else { throw IntrospectionResponse.Invalid(reason: "aud is neither a string nor an array of strings") }
            audience = many
        }
        switch present("cnf") {
        case nil:
            boundKeyThumbprint = nil
            hasUncheckableBinding = false
        case .object(let confirmation)?:
            let jkt = confirmation.last { $0.name == "jkt" }?.value
            guard jkt == nil || jkt == .null || jkt?.string != nil else {
                throw IntrospectionResponse.Invalid(reason: "cnf.jkt is not a string")
            }
            boundKeyThumbprint = jkt?.string
            hasUncheckableBinding = boundKeyThumbprint == nil
        case _?:
            throw IntrospectionResponse.Invalid(reason: "cnf is not an object")
        }
        self.claims = claims
    }

    /// Names the members only: their values identify a person.
    public var description: String {
        "active token (\(claims.members.map(\.name).joined(separator: ", ")))"
    }

    public var debugDescription: String { description }

    public var customMirror: Mirror {
        Mirror(self, children: ["token": description], displayStyle: .struct)
    }
}
