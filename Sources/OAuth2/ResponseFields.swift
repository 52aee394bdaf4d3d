/// The names of the fields of a token response that carry the token, its lifetime and its
/// type (`responseFields`); the standard names by default.
public struct ResponseFields: Sendable, Equatable, Hashable {
    public var token: String
    public var expiry: String
    public var type: String

    public init(token: String = "access_token", expiry: String = "expires_in", type: String = "token_type") {
        self.token = token
        self.expiry = expiry
        self.type = type
    }
}
