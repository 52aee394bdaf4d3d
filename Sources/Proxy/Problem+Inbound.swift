import Config
import JOSE

/// The answers of a route with `inbound` to a caller it does not take (RFC 6750 §3, RFC 9449
/// §7.1): the status, the `WWW-Authenticate` challenge (with `error` only when a token, proof or
/// request was wrong, not when none came), and a problem body naming the route. Nothing of the
/// token or proof is in either.
///
/// A refusal of a request that came with `Authorization: DPoP`, or of one about DPoP itself (a
/// proof, a binding, a route that requires DPoP), is challenged with `DPoP … algs="…"`; others
/// with `Bearer realm="oauth-relay"`. A request with no token is offered each scheme the route
/// takes.
extension Problem {
    static let bearerRealm = "oauth-relay"

    static func inbound(_ refusal: InboundRefusal, route: String?, challenges: InboundChallenges = .bearerOnly,
                        presentedAsDPoP: Bool = false) -> Problem {
        // A route that refuses DPoP challenges with Bearer only, whatever came; one that takes no
        // Bearer (`dpop: "required"`) with DPoP only, whatever came (a malformed request too).
        let dpop = (presentedAsDPoP || refusal.concernsDPoP || !challenges.takesBearer) ? challenges.dpopAlgorithms : nil
        func challenge(_ error: String, _ description: String, extra: String = "") -> String {
            let safe = String(description.unicodeScalars.filter { $0.value >= 0x20 && $0.value < 0x7F && $0 != "\"" && $0 != "\\" })
            if let dpop { return "DPoP error=\"\(error)\", error_description=\"\(safe)\"\(extra), algs=\"\(dpop)\"" }
            return "Bearer realm=\"\(bearerRealm)\", error=\"\(error)\", error_description=\"\(safe)\"\(extra)"
        }
        var problem: Problem
        switch refusal {
        case .noToken:
            let schemes = (challenges.takesBearer ? ["Bearer"] : []) + (challenges.dpopAlgorithms == nil ? [] : ["DPoP"])
            problem = Problem(status: 401, slug: "caller-token-required", title: "Unauthorized",
                              detail: "this route needs the caller's token (Authorization: \(schemes.joined(separator: " or ")))", route: route)
            if challenges.takesBearer { problem.extraHeaders.append(("WWW-Authenticate", "Bearer realm=\"\(bearerRealm)\"")) }
            if let algorithms = challenges.dpopAlgorithms { problem.extraHeaders.append(("WWW-Authenticate", "DPoP algs=\"\(algorithms)\"")) }
        case .malformedRequest(let why):
            problem = Problem(status: 400, slug: "invalid-request", title: "Bad Request", detail: why, route: route)
            problem.extraHeaders.append(("WWW-Authenticate", challenge("invalid_request", why)))
        case .invalidToken(let reason):
            problem = Problem(status: 401, slug: "invalid-token", title: "Unauthorized", detail: reason.rawValue, route: route)
            problem.extraHeaders.append(("WWW-Authenticate", challenge("invalid_token", reason.rawValue)))
        case .bindingMismatch(let mismatch):
            problem = Problem(status: 401, slug: "invalid-token", title: "Unauthorized", detail: mismatch.description, route: route)
            problem.extraHeaders.append(("WWW-Authenticate", challenge("invalid_token", mismatch.description)))
        case .dpopRequired:
            let why = "this route takes DPoP-bound tokens only (Authorization: DPoP with a DPoP proof)"
            problem = Problem(status: 401, slug: "invalid-token", title: "Unauthorized", detail: why, route: route)
            problem.extraHeaders.append(("WWW-Authenticate", challenge("invalid_token", why)))
        case .invalidProof(let why):
            problem = Problem(status: 401, slug: "invalid-dpop-proof", title: "Unauthorized", detail: why, route: route)
            problem.extraHeaders.append(("WWW-Authenticate", challenge("invalid_dpop_proof", why)))
        case .replayedProof:
            let why = DPoPProofRefusal.replayed.description
            problem = Problem(status: 401, slug: "invalid-dpop-proof", title: "Unauthorized", detail: why, route: route)
            problem.extraHeaders.append(("WWW-Authenticate", challenge("invalid_dpop_proof", why)))
        case .insufficientScope(let missing, let required):
            let description = "the token lacks the scope" + (missing.count == 1 ? " " : "s ") + missing.joined(separator: " ")
            problem = Problem(status: 403, slug: "insufficient-scope", title: "Forbidden", detail: description, route: route)
            problem.extraHeaders.append(("WWW-Authenticate",
                                         challenge("insufficient_scope", description, extra: ", scope=\"\(required.joined(separator: " "))\"")))
        case .keysUnavailable(let reason, let retryAfter):
            problem = Problem(status: 503, slug: "caller-keys-unavailable", title: "Service Unavailable",
                              detail: "the caller's token cannot be checked now: \(reason)", route: route)
            problem.extraHeaders.append(("Retry-After", "\(retryAfter)"))
        case .introspectionUnavailable(let reason, let retryAfter):
            problem = Problem(status: 503, slug: "caller-introspection-unavailable", title: "Service Unavailable",
                              detail: "the caller's token cannot be checked now: \(reason)", route: route)
            problem.extraHeaders.append(("Retry-After", "\(retryAfter)"))
        case .proofMemoryFull(let retryAfter):
            problem = Problem(status: 503, slug: "dpop-replay-memory-full", title: "Service Unavailable",
                              detail: "too many DPoP proofs are being remembered to tell a replay; try again", route: route)
            problem.extraHeaders.append(("Retry-After", "\(retryAfter)"))
        }
        return problem
    }
}

/// The schemes a route with `inbound` takes, as its challenges name them.
struct InboundChallenges: Sendable, Equatable {
    /// `Bearer` presentations are taken (not with `dpop: "required"`).
    let takesBearer: Bool
    /// The proof algorithms, space-separated (`algs`, RFC 9449 §7.1); nil with `dpop: "refused"`.
    let dpopAlgorithms: String?

    static let bearerOnly = InboundChallenges(takesBearer: true, dpopAlgorithms: nil)

    init(takesBearer: Bool, dpopAlgorithms: String?) {
        self.takesBearer = takesBearer
        self.dpopAlgorithms = dpopAlgorithms
    }

    init(_ dpop: InboundDPoP) {
        takesBearer = dpop.mode != .required
        dpopAlgorithms = dpop.mode == .refused ? nil : dpop.algorithms.map(\.rawValue).joined(separator: " ")
    }
}
