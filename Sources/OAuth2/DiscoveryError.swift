/// Why an identity's provider metadata could not be had. Messages name the document's URL and
/// the member, quote at most 200 cleaned characters of what the IdP sent, and never a body
/// whole (a discovery document holds no secret, but may be a huge HTML page).
public enum DiscoveryError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The configured `issuer` cannot be an issuer identifier (RFC 8414 §2: an https URL
    /// without query or fragment).
    case invalidIssuer(issuer: String, reason: String)
    /// None of the document URLs served a metadata document; `answers` says what each did.
    case noDocument(issuer: String, answers: [String])
    /// The IdP could not be reached or was overloaded (unreachable, timeout, 5xx, 429).
    case unavailable(url: String, reason: String, retryAfter: Double?)
    /// A document that is not usable metadata: a member missing, of the wrong type, an
    /// endpoint that is not an absolute https URL.
    case invalidDocument(url: String, reason: String)
    /// RFC 8414 §3.3 / OpenID Connect Discovery §4.3: the document's `issuer` must be the
    /// configured one exactly, or an attacker's metadata could stand in for the real IdP's.
    case issuerMismatch(url: String, expected: String, found: String)
    /// The document names no endpoint for what the identity needs (and its configuration names
    /// none either): `RequiredEndpoint.metadataMember` of each.
    case missingEndpoints(url: String, [RequiredEndpoint])

    /// True when trying again later may help without a config change.
    public var isTemporary: Bool {
        if case .unavailable = self { return true }
        return false
    }

    public var retryAfter: Double? {
        if case .unavailable(_, _, let retryAfter) = self { return retryAfter }
        return nil
    }

    /// A short code for logs, metrics and `/identities`.
    public var code: String {
        switch self {
        case .invalidIssuer: "invalid_issuer"
        case .noDocument: "no_discovery_document"
        case .unavailable: "discovery_unavailable"
        case .invalidDocument: "invalid_discovery_document"
        case .issuerMismatch: "issuer_mismatch"
        case .missingEndpoints: "discovery_endpoint_missing"
        }
    }

    public var description: String {
        switch self {
        case .invalidIssuer(let issuer, let reason):
            "the issuer \"\(issuer)\" is not an issuer identifier: \(reason)"
        case .noDocument(let issuer, let answers):
            "no discovery document for issuer \"\(issuer)\": " + answers.joined(separator: "; ")
        case .unavailable(let url, let reason, let retryAfter):
            "discovery at \(url) failed: \(reason)" + (retryAfter.map { ", Retry-After \(SecondsText.format($0)) s" } ?? "")
        case .invalidDocument(let url, let reason):
            "the discovery document at \(url) is not usable: \(reason)"
        case .issuerMismatch(let url, let expected, let found):
            "the discovery document at \(url) names the issuer \"\(found)\", not the configured \"\(expected)\" "
                + "(they must be identical, RFC 8414 §3.3)"
        case .missingEndpoints(let url, let missing):
            "the discovery document at \(url) has no "
                + missing.map { "\($0.metadataMember), which \($0.neededFor) needs (or configure \($0.configKey))" }
                    .joined(separator: ", and no ")
        }
    }
}
