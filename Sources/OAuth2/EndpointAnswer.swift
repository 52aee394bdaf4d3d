import JSON

/// The first reading of an answer from any of the IdP's endpoints the relay POSTs to (token,
/// device authorization, revocation): what makes an answer an error is the same for all of
/// them (RFC 6749 §5.2, which RFC 8628 §3.2 and RFC 7009 §2.2.1 reuse), so it is decided here
/// once and each request reads only the members of a success.
enum EndpointAnswer {
    /// The members of a 2xx answer (nil when its body is empty or neither JSON nor a form), or
    /// the error the answer is: a redirect (never followed), an OAuth error with any status, a
    /// 2xx with an `error` member, any other status. `secrets` are removed from quoted text.
    static func successMembers(of reply: TokenEndpointReply, format: TokenResponseFormat, secrets: [String],
                               unixTime: Double) throws(TokenEndpointError) -> [String: JSONValue]? {
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
        return members
    }

    /// An `error` member that says there is an error: anything but absent, `null`, `false` or
    /// an empty string (some APIs send those on success).
    private static func hasErrorMember(_ members: [String: JSONValue]) -> Bool {
        switch members["error"] {
        case nil, .null?: return false
        case .bool(let flag)?: return flag
        case .string(let text)?: return !text.isEmpty
        default: return true
        }
    }

    private static func oauthError(in members: [String: JSONValue], removing secrets: [String]) -> OAuthError? {
        guard let code = members["error"]?.string, !code.isEmpty else { return nil }
        return OAuthError(code: OAuthErrorCode(ErrorText.clean(code, removing: secrets)),
                          errorDescription: members["error_description"]?.string.map { ErrorText.clean($0, removing: secrets) },
                          errorURI: members["error_uri"]?.string.map { ErrorText.clean($0, removing: secrets) })
    }
}

/// The members of an endpoint's body: a JSON object, or form-encoded pairs when the body is
/// labelled `application/x-www-form-urlencoded` or `text/plain`.
enum ResponseBody {
    static func members(of reply: TokenEndpointReply) -> [String: JSONValue]? {
        guard !reply.body.isEmpty else { return nil }
        if let object = (try? JSONValue(parsing: reply.body))?.dictionary {
            return object
        }
        guard reply.mediaType == "application/x-www-form-urlencoded" || reply.mediaType == "text/plain" else { return nil }
        let pairs = FormURLEncoding.decode(String(decoding: reply.body, as: UTF8.self))
        guard !pairs.isEmpty, pairs.allSatisfy({ !$0.name.isEmpty && !$0.name.contains(" ") }) else { return nil }
        return Dictionary(pairs.map { ($0.name, JSONValue.string($0.value)) }, uniquingKeysWith: { first, _ in first })
    }
}
