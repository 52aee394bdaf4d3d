/// Where a token response carries the token, its lifetime, its type, a new refresh token and the
/// granted scope (`responseFields`), each a `ResponseMember` (the standard names by default), the
/// i-th paths of the members belonging together (a member of one path serves every alternative
/// of the token's), and the token
/// type values an IdP names its own way (`typeValues`: Slack's `bot` and `user` are bearer tokens).
public struct ResponseFields: Sendable, Equatable, Hashable {
    public var token: ResponseMember
    public var expiry: ResponseMember
    public var type: ResponseMember
    public var refreshToken: ResponseMember
    public var scope: ResponseMember
    /// An IdP's own token type values, lowercased (types compare case-insensitively, RFC 6749
    /// §5.1), each mapped to `Bearer` or `DPoP`. Never `bearer` or `dpop` themselves.
    public var typeValues: [String: String]

    /// The standard names (RFC 6749 §5.1), built once: each identity starts from them, and
    /// splitting their paths anew for each was a fifth of decoding an identity (callgrind).
    public static let standard = ResponseFields()

    public init(token: ResponseMember = "access_token", expiry: ResponseMember = "expires_in", type: ResponseMember = "token_type",
                refreshToken: ResponseMember = "refresh_token", scope: ResponseMember = "scope", typeValues: [String: String] = [:]) {
        self.token = token
        self.expiry = expiry
        self.type = type
        self.refreshToken = refreshToken
        self.scope = scope
        self.typeValues = typeValues
    }

    /// The type a token `sent` as (nil: the answer names none) is used as: the mapped type when
    /// `typeValues` names it, else `Bearer` or `DPoP` for any casing of them (`Bearer` when
    /// absent), else the type as sent (which the relay then refuses).
    public func tokenType(sent: String?) -> String {
        if let sent, let mapped = typeValues[sent.lowercased()] { return mapped }
        guard let sent, !sent.isEmpty else { return "Bearer" }
        switch sent.lowercased() {
        case "bearer": return "Bearer"
        case "dpop": return "DPoP"
        default: return sent
        }
    }
}
