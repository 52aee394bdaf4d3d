/// The answers of a route with `inbound` to a caller it does not take (RFC 6750 §3): the status,
/// the `WWW-Authenticate: Bearer` challenge (with `error` only when a token or request was wrong,
/// not when none came), and a problem body naming the route. Nothing of the token is in either.
extension Problem {
    static let bearerRealm = "oauth-relay"

    static func inbound(_ refusal: InboundRefusal, route: String?) -> Problem {
        var problem: Problem
        switch refusal {
        case .noToken:
            problem = Problem(status: 401, slug: "caller-token-required", title: "Unauthorized",
                              detail: "this route needs the caller's bearer token (Authorization: Bearer)", route: route)
            problem.extraHeaders.append(("WWW-Authenticate", "Bearer realm=\"\(bearerRealm)\""))
        case .malformedRequest(let why):
            problem = Problem(status: 400, slug: "invalid-request", title: "Bad Request", detail: why, route: route)
            problem.extraHeaders.append(("WWW-Authenticate", challenge(error: "invalid_request", description: why)))
        case .invalidToken(let reason):
            problem = Problem(status: 401, slug: "invalid-token", title: "Unauthorized", detail: reason.rawValue, route: route)
            problem.extraHeaders.append(("WWW-Authenticate", challenge(error: "invalid_token", description: reason.rawValue)))
        case .insufficientScope(let missing, let required):
            let description = "the token lacks the scope" + (missing.count == 1 ? " " : "s ") + missing.joined(separator: " ")
            problem = Problem(status: 403, slug: "insufficient-scope", title: "Forbidden", detail: description, route: route)
            problem.extraHeaders.append(("WWW-Authenticate", challenge(error: "insufficient_scope", description: description)
                                            + ", scope=\"\(required.joined(separator: " "))\""))
        case .keysUnavailable(let reason, let retryAfter):
            problem = Problem(status: 503, slug: "caller-keys-unavailable", title: "Service Unavailable",
                              detail: "the caller's token cannot be checked now: \(reason)", route: route)
            problem.extraHeaders.append(("Retry-After", "\(retryAfter)"))
        }
        return problem
    }

    /// `Bearer realm="oauth-relay", error="…", error_description="…"`. Descriptions are the
    /// relay's own sentences; a `"` or `\` (which RFC 6750 §3 does not allow there) is dropped.
    private static func challenge(error: String, description: String) -> String {
        let safe = String(description.unicodeScalars.filter { $0.value >= 0x20 && $0.value < 0x7F && $0 != "\"" && $0 != "\\" })
        return "Bearer realm=\"\(bearerRealm)\", error=\"\(error)\", error_description=\"\(safe)\""
    }
}
