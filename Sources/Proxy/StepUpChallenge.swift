import HTTP1
import HTTPFields
import OAuth2

/// The step-up an upstream's 401 or 403 asks of a person's login (RFC 6750 §3.1
/// `insufficient_scope` with a `scope`, RFC 9470 `insufficient_user_authentication` with
/// `acr_values`/`max_age`), read from every `WWW-Authenticate` field of the head by
/// `BearerChallenge.parse`. Asked only for those statuses on a route whose identity logs a
/// person in, so an ordinary response costs nothing.
enum StepUpChallenge {
    private static let fieldName = Array("www-authenticate".utf8)

    /// The step-up `head` asks for; nil when it asks for none.
    static func stepUp(in head: HTTPHead) -> StepUp? {
        var values: [String] = []
        for field in head.fields where ASCII.equalsIgnoringCase(head.name(field), fieldName) {
            values.append(String(decoding: head.value(field), as: UTF8.self))
        }
        guard !values.isEmpty else { return nil }
        return BearerChallenge.parse(values)?.stepUp
    }
}
