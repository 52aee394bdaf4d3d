import JSON
import SafeText

/// A successful token response (RFC 6749 §5.1), read leniently where real IdPs differ:
/// `expires_in` as a number or a numeric string, and when absent (or not a positive number)
/// the token's JWT `exp`, else the identity's `defaultExpiresInSeconds`, never more than a year
/// (`TokenLifetime` has the rules); `token_type` compared case-insensitively (`bearer` becomes
/// `Bearer`, absent means `Bearer`, an IdP's own name mapped by `typeValues`, any other type but
/// Bearer or DPoP refused, and DPoP unless the identity has a DPoP key); the token, expiry, type
/// refresh token and scope where `responseFields` says, nested members included, all of the
/// alternative the token was found by (`ResponseMember.resolve`); a JSON object or,
/// from older IdPs, a form-encoded body.
/// An answer with an `error` member is an error whatever its status and whatever else it holds.
public struct TokenResponse: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// Where `expiresIn` came from.
    public enum ExpirySource: String, Sendable, Equatable {
        case expiresIn = "expires_in"
        /// When the answer says the token expires (GitHub's `expires_at`).
        case expiresAt = "expires_at"
        case jwtExp = "jwt_exp"
        case defaultLifetime = "default"
    }

    public var accessToken: Secret
    public var tokenType: String
    /// Seconds the token lives from when it was requested.
    public var expiresIn: Double
    public var expirySource: ExpirySource
    /// A new refresh token, or nil when the response has none (the old one is then kept).
    public var refreshToken: Secret?
    public var scope: String?
    /// RFC 8693 `issued_token_type`.
    public var issuedTokenType: String?
    /// The OpenID Connect ID token of an authorization-code or device login (`IDTokenCheck`
    /// validates it; nil when the answer has none).
    public var idToken: Secret?
    /// What the relay had to adjust in the answer's lifetime (log them once, with the identity).
    public var lifetimeWarnings: [LifetimeWarning] = []

    public init(accessToken: Secret, tokenType: String = "Bearer", expiresIn: Double, expirySource: ExpirySource = .expiresIn,
                refreshToken: Secret? = nil, scope: String? = nil, issuedTokenType: String? = nil, idToken: Secret? = nil) {
        self.accessToken = accessToken
        self.tokenType = tokenType
        self.expiresIn = expiresIn
        self.expirySource = expirySource
        self.refreshToken = refreshToken
        self.scope = scope
        self.issuedTokenType = issuedTokenType
        self.idToken = idToken
    }

    /// Reads a token endpoint's answer: a token, or the error it is (see `TokenEndpointError`).
    /// `secrets` are the values the request carried, removed from any text quoted in an error;
    /// `unixTime` is the wall-clock time, for a JWT's `exp` and an HTTP-date `Retry-After`. A
    /// GitHub App's answer has a shape of its own (`GitHubTokenAnswer`).
    public static func parse(_ reply: TokenEndpointReply, format: TokenResponseFormat = TokenResponseFormat(),
                             secrets: [String] = [], unixTime: Double) throws(TokenEndpointError) -> TokenResponse {
        if format.shape == .gitHubInstallationToken {
            return try GitHubTokenAnswer.parse(reply, secrets: secrets, unixTime: unixTime)
        }
        let members = try EndpointAnswer.successMembers(of: reply, format: format, secrets: secrets, unixTime: unixTime)
        guard let members else {
            throw .invalidTokenResponse(status: reply.status, contentType: reply.mediaType,
                                        reason: reply.body.isEmpty ? "the body is empty" : "the body is not a JSON object")
        }
        return try TokenResponse(members: members, format: format, unixTime: unixTime) { reason in
            .invalidTokenResponse(status: reply.status, contentType: reply.mediaType, reason: reason)
        }
    }

    private init(members: [String: JSONValue], format: TokenResponseFormat, unixTime: Double,
                 invalid: (String) -> TokenEndpointError) throws(TokenEndpointError) {
        let names = format.fields
        let token: String
        let alternative: Int
        do throws(UnusableAnswer) {
            (token, alternative) = try Self.token(in: members, at: names.token)
        } catch {
            throw invalid(error.reason)
        }
        accessToken = Secret(token)
        // The token's alternative says where the rest is: never a type, expiry or refresh token
        // of another object (Slack's bot token beside a user token).
        let typeLookup = names.type.lookup(in: members, alternative: alternative)
        tokenType = names.tokenType(sent: typeLookup.value?.string)
        guard Self.usableTypes.contains(tokenType) else {
            // Sent as Bearer, a MAC or N_A token would only be refused upstream, or worse, accepted
            // without the proof its type demands.
            let field = if case .value(_, let path) = typeLookup { path } else { names.type.description }
            throw invalid("\(field) \"\(ErrorText.clean(String(tokenType.prefix(32)), removing: [token]))\" is not Bearer or DPoP, "
                + "the only types the relay can send (responseFields.typeValues maps an IdP's own names for them)")
        }
        guard tokenType != "DPoP" || format.acceptsDPoP else {
            // A DPoP-bound token is useless without the key it is bound to, and the relay sent no
            // proof: an IdP that binds anyway answered a request it was not asked.
            throw invalid("token_type DPoP, but the identity has no dpop key to prove possession with")
        }
        let expiry = names.expiry.lookup(in: members, alternative: alternative)
        let expiryField = if case .value(_, let path) = expiry { path } else { names.expiry.description }
        let lifetime: TokenLifetime
        do throws(TokenLifetime.LifetimeError) {
            lifetime = try TokenLifetime.resolve(expiry: expiry.value, field: expiryField, token: token,
                                                 unixTime: unixTime, defaultSeconds: format.defaultExpiresInSeconds)
        } catch {
            throw invalid("the token is a JWT whose exp has already passed")
        }
        (expiresIn, expirySource, lifetimeWarnings) = (lifetime.seconds, lifetime.source, lifetime.warnings)
        refreshToken = names.refreshToken.lookup(in: members, alternative: alternative).value?.string
            .flatMap { $0.isEmpty ? nil : Secret($0) }
        let scopeValue = names.scope.lookup(in: members, alternative: alternative).value
        scope = scopeValue?.string ?? scopeValue?.strings?.joined(separator: " ")
        issuedTokenType = members["issued_token_type"]?.string
        idToken = members["id_token"]?.string.flatMap { $0.isEmpty ? nil : Secret($0) }
    }

    /// The token at `member` of an answer's members: a non-empty string that can go in a header,
    /// and the alternative of `member` it was found by.
    static func token(in members: [String: JSONValue], at member: ResponseMember) throws(UnusableAnswer) -> (String, alternative: Int) {
        let (lookup, alternative) = member.resolve(in: members)
        switch lookup {
        case .value(let value, let path):
            guard let text = value.string, !text.isEmpty else { throw UnusableAnswer("\(path) is not a non-empty string") }
            guard text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
                throw UnusableAnswer("\(path) holds characters that cannot go in a header (spaces, control or non-ASCII characters)")
            }
            return (text, alternative)
        case .missing(let object?, let fields) where member.paths.count > 1 && member.paths[alternative].count > 1:
            // A nested alternative whose object is there claims the answer (`ResponseMember.resolve`).
            let present = fields.prefix(10).map { ErrorText.clean($0, removing: []) }.joined(separator: ", ")
            throw UnusableAnswer("no \(member.paths[alternative].joined(separator: ".")) field (fields of \(object): \(present)); "
                                 + "the answer has \(object), so no other alternative of \(member) is read")
        case .missing(let object, let fields):
            let present = fields.prefix(10).map { ErrorText.clean($0, removing: []) }.joined(separator: ", ")
            throw UnusableAnswer("no \(member) field (fields\(object.map { " of \($0)" } ?? ""): \(present))")
        case .notAnObject(let prefix, let held):
            throw UnusableAnswer("\(prefix) holds \(held), not an object, so \(member) cannot be read")
        }
    }

    /// The token types the relay can put on a request (RFC 6750, RFC 9449).
    static let usableTypes: Set<String> = ["Bearer", "DPoP"]

    public var description: String {
        var text = "\(tokenType) \(accessToken), expires in \(SecondsText.format(expiresIn)) s (\(expirySource.rawValue))"
        if let refreshToken { text += ", refresh token \(refreshToken)" }
        if let scope { text += ", scope \"\(scope)\"" }
        if idToken != nil { text += ", with an ID token" }
        return text
    }

    public var debugDescription: String { description }

    public var customMirror: Mirror {
        Mirror(self, children: ["response": description], displayStyle: .struct)
    }
}

/// Why a successful answer cannot be used: the reason of its `invalidTokenResponse`.
struct UnusableAnswer: Error {
    let reason: String

    init(_ reason: String) {
        self.reason = reason
    }
}
