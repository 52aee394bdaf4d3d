import HTTP1
import HTTPFields
import OAuth2

/// The step-up an upstream's 401 or 403 asks of a person's login (RFC 6750 §3.1
/// `insufficient_scope` with a `scope`, RFC 9470 `insufficient_user_authentication` with
/// `acr_values`/`max_age`), read from every `WWW-Authenticate` field of the head by
/// `BearerChallenge.parseAll`. Asked only for those statuses on a route whose identity logs a
/// person in, so an ordinary response costs nothing.
enum StepUpChallenge {
    private static let fieldName = Array("www-authenticate".utf8)

    /// The step-up `head` asks of a token sent as `DPoP` (`sentAsDPoP`) or `Bearer`; nil when it
    /// asks for none. An upstream that takes both schemes challenges each (RFC 9449 §7.1): the
    /// first challenge of the token's scheme is the one that speaks of it; when there is none of
    /// that scheme, the first `Bearer` or `DPoP` one.
    static func stepUp(in head: HTTPHead, sentAsDPoP: Bool) -> StepUp? {
        var values: [String] = []
        for field in head.fields where ASCII.equalsIgnoringCase(head.name(field), fieldName) {
            values.append(String(decoding: head.value(field), as: UTF8.self))
        }
        guard !values.isEmpty else { return nil }
        let challenges = BearerChallenge.parseAll(values)
        let scheme = sentAsDPoP ? "dpop" : "bearer"
        return (challenges.first { $0.scheme.lowercased() == scheme } ?? challenges.first)?.stepUp
    }
}
