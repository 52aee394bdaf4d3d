import Foundation

/// A successful token response (RFC 6749 §5.1), read leniently where real IdPs differ:
/// `expires_in` as a number or a numeric string, and when absent (or not a positive number)
/// the token's JWT `exp`, else the identity's `defaultExpiresInSeconds`, never more than a year
/// (`TokenLifetime` has the rules); `token_type` compared case-insensitively (`bearer` becomes
/// `Bearer`, absent means `Bearer`, any type but Bearer or DPoP is refused, and DPoP unless the
/// identity has a DPoP key); a JSON object or, from older IdPs, a form-encoded body.
/// An answer with an `error` member is an error whatever its status and whatever else it holds.
public struct TokenResponse: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// Where `expiresIn` came from.
    public enum ExpirySource: String, Sendable, Equatable {
        case expiresIn = "expires_in"
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
    /// What the relay had to adjust in the answer's lifetime (log them once, with the identity).
    public var lifetimeWarnings: [LifetimeWarning] = []

    public init(accessToken: Secret, tokenType: String = "Bearer", expiresIn: Double, expirySource: ExpirySource = .expiresIn,
                refreshToken: Secret? = nil, scope: String? = nil, issuedTokenType: String? = nil) {
        self.accessToken = accessToken
        self.tokenType = tokenType
        self.expiresIn = expiresIn
        self.expirySource = expirySource
        self.refreshToken = refreshToken
        self.scope = scope
        self.issuedTokenType = issuedTokenType
    }

    /// Reads a token endpoint's answer: a token, or the error it is (see `TokenEndpointError`).
    /// `secrets` are the values the request carried, removed from any text quoted in an error;
    /// `unixTime` is the wall-clock time, for a JWT's `exp` and an HTTP-date `Retry-After`.
    public static func parse(_ reply: TokenEndpointReply, format: TokenResponseFormat = TokenResponseFormat(),
                             secrets: [String] = [], unixTime: Double) throws(TokenEndpointError) -> TokenResponse {
        let status = reply.status
        if (300..<400).contains(status) {
            throw .redirect(status: status, location: reply.header("Location").map { ErrorText.location($0, removing: secrets) })
        }
        let retryAfter = reply.header("Retry-After").flatMap { RetryAfter.seconds($0, unixTime: unixTime) }
        let members = ResponseBody.members(of: reply)
        // An answer that says it is an error is one, even a 200 that also carries a token: an
        // IdP that is unsure whether it issued a token did not issue one the relay should use.
        if let members, let error = oauthError(in: members, removing: secrets) {
            throw .oauth(error, status: status, retryAfter: retryAfter)
        }
        if let members, (200..<300).contains(status), hasErrorMember(members) {
            throw .invalidTokenResponse(status: status, contentType: reply.mediaType,
                                        reason: "the answer has an error member that is not an OAuth error code")
        }
        guard (200..<300).contains(status) else {
            throw .unexpectedStatus(status: status, contentType: reply.mediaType,
                                    excerpt: ErrorText.excerpt(of: reply, format: format, removing: secrets), retryAfter: retryAfter)
        }
        guard let members else {
            throw .invalidTokenResponse(status: status, contentType: reply.mediaType,
                                        reason: reply.body.isEmpty ? "the body is empty" : "the body is not a JSON object")
        }
        return try TokenResponse(members: members, format: format, unixTime: unixTime) { reason in
            .invalidTokenResponse(status: status, contentType: reply.mediaType, reason: reason)
        }
    }

    private init(members: [String: Any], format: TokenResponseFormat, unixTime: Double,
                 invalid: (String) -> TokenEndpointError) throws(TokenEndpointError) {
        let names = format.fields
        guard let value = members[names.token] else {
            let present = members.keys.sorted().prefix(10).map { ErrorText.clean($0, removing: []) }
            throw invalid("no \(names.token) field (fields: \(present.joined(separator: ", ")))")
        }
        guard let token = value as? String, !token.isEmpty else {
            throw invalid("\(names.token) is not a non-empty string")
        }
        guard token.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw invalid("\(names.token) holds characters that cannot go in a header (spaces, control or non-ASCII characters)")
        }
        accessToken = Secret(token)
        tokenType = Self.normalizedType(members[names.type] as? String)
        guard Self.usableTypes.contains(tokenType) else {
            // Sent as Bearer, a MAC or N_A token would only be refused upstream, or worse, accepted
            // without the proof its type demands.
            throw invalid("token_type \"\(ErrorText.clean(String(tokenType.prefix(32)), removing: [token]))\" is not Bearer or DPoP, "
                + "the only types the relay can send")
        }
        guard tokenType != "DPoP" || format.acceptsDPoP else {
            // A DPoP-bound token is useless without the key it is bound to, and the relay sent no
            // proof: an IdP that binds anyway answered a request it was not asked.
            throw invalid("token_type DPoP, but the identity has no dpop key to prove possession with")
        }
        let lifetime: TokenLifetime
        do throws(TokenLifetime.LifetimeError) {
            lifetime = try TokenLifetime.resolve(expiry: members[names.expiry], field: names.expiry, token: token,
                                                 unixTime: unixTime, defaultSeconds: format.defaultExpiresInSeconds)
        } catch {
            throw invalid("the token is a JWT whose exp has already passed")
        }
        (expiresIn, expirySource, lifetimeWarnings) = (lifetime.seconds, lifetime.source, lifetime.warnings)
        refreshToken = (members["refresh_token"] as? String).flatMap { $0.isEmpty ? nil : Secret($0) }
        scope = (members["scope"] as? String) ?? (members["scope"] as? [String])?.joined(separator: " ")
        issuedTokenType = members["issued_token_type"] as? String
    }

    /// The token types the relay can put on a request (RFC 6750, RFC 9449).
    static let usableTypes: Set<String> = ["Bearer", "DPoP"]

    /// `Bearer` for any casing of it (and when absent), `DPoP` likewise; other types as sent.
    static func normalizedType(_ type: String?) -> String {
        guard let type, !type.isEmpty else { return "Bearer" }
        switch type.lowercased() {
        case "bearer": return "Bearer"
        case "dpop": return "DPoP"
        default: return type
        }
    }

    /// An `error` member that says there is an error: anything but absent, `null`, `false` or
    /// an empty string (some APIs send those on success).
    private static func hasErrorMember(_ members: [String: Any]) -> Bool {
        let member = members["error"]
        if let flag = JSONBoolean.value(of: member) { return flag }
        switch member {
        case nil, is NSNull: return false
        case let text as String: return !text.isEmpty
        default: return true
        }
    }

    private static func oauthError(in members: [String: Any], removing secrets: [String]) -> OAuthError? {
        guard let code = members["error"] as? String, !code.isEmpty else { return nil }
        return OAuthError(code: OAuthErrorCode(ErrorText.clean(code, removing: secrets)),
                          errorDescription: (members["error_description"] as? String).map { ErrorText.clean($0, removing: secrets) },
                          errorURI: (members["error_uri"] as? String).map { ErrorText.clean($0, removing: secrets) })
    }

    public var description: String {
        var text = "\(tokenType) \(accessToken), expires in \(SecondsText.format(expiresIn)) s (\(expirySource.rawValue))"
        if let refreshToken { text += ", refresh token \(refreshToken)" }
        if let scope { text += ", scope \"\(scope)\"" }
        return text
    }

    public var debugDescription: String { description }

    public var customMirror: Mirror {
        Mirror(self, children: ["response": description], displayStyle: .struct)
    }
}

/// The members of a token endpoint's body: a JSON object, or form-encoded pairs when the body
/// is labelled `application/x-www-form-urlencoded` or `text/plain`.
enum ResponseBody {
    static func members(of reply: TokenEndpointReply) -> [String: Any]? {
        guard !reply.body.isEmpty else { return nil }
        if let object = try? JSONSerialization.jsonObject(with: Data(reply.body)) as? [String: Any] {
            return object
        }
        guard reply.mediaType == "application/x-www-form-urlencoded" || reply.mediaType == "text/plain" else { return nil }
        let pairs = FormURLEncoding.decode(String(decoding: reply.body, as: UTF8.self))
        guard !pairs.isEmpty, pairs.allSatisfy({ !$0.name.isEmpty && !$0.name.contains(" ") }) else { return nil }
        return Dictionary(pairs.map { ($0.name, $0.value as Any) }, uniquingKeysWith: { first, _ in first })
    }
}
