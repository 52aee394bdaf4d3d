import Endpoints

/// One discovery of an issuer's metadata, as a few steps the token thread drives: fetch the
/// URL it names, report the answer (or the transport's failure), until it gives the metadata
/// or an error. No I/O here.
///
///     var discovery = try ProviderDiscovery(issuer: issuer, allowInsecureHTTP: insecure)
///     var step = ProviderDiscovery.Step.fetch(discovery.firstURL)
///     while case .fetch(let url) = step { step = discovery.received(try await get(url), unixTime: now) }
///
/// The OpenID Connect document is asked for first; when its URL serves none (404, a page that
/// is not JSON), the RFC 8414 one. An IdP that cannot answer (unreachable, 5xx) is not asked at
/// the next URL: the whole discovery is retried later, with backoff, by the caller.
public struct ProviderDiscovery: Sendable {
    /// What to do next.
    public enum Step: Sendable, Equatable {
        /// GET this URL (`Accept: application/json`, redirects not followed) and report the answer.
        case fetch(HTTPURL)
        case found(ProviderMetadata)
        case failed(DiscoveryError)
    }

    public let issuer: String
    public let allowInsecureHTTP: Bool
    /// The URLs in the order they are tried.
    public let documentURLs: [HTTPURL]
    private var index = 0
    private var answers: [String] = []

    public init(issuer: String, allowInsecureHTTP: Bool = false) throws(DiscoveryError) {
        self.issuer = issuer
        self.allowInsecureHTTP = allowInsecureHTTP
        documentURLs = try ProviderMetadata.documentURLs(issuer: issuer, allowInsecureHTTP: allowInsecureHTTP)
    }

    public var firstURL: HTTPURL { documentURLs[0] }

    /// The URL asked last.
    public var currentURL: HTTPURL { documentURLs[min(index, documentURLs.count - 1)] }

    /// The answer to the request for `currentURL`.
    public mutating func received(_ reply: TokenEndpointReply, unixTime: Double) -> Step {
        let url = currentURL
        switch DocumentAnswer(reply, from: url, unixTime: unixTime) {
        case .document(let members):
            do throws(DiscoveryError) {
                return .found(try ProviderMetadata(members: members, from: url.description, issuer: issuer,
                                                   allowInsecureHTTP: allowInsecureHTTP))
            } catch {
                return .failed(error)
            }
        case .notHere(let answer):
            answers.append(answer)
            index += 1
            guard index < documentURLs.count else { return .failed(.noDocument(issuer: issuer, answers: answers)) }
            return .fetch(documentURLs[index])
        case .failed(let error):
            return .failed(error)
        }
    }

    /// The request for `currentURL` got no answer: the HTTP client's `unreachable` or
    /// `timedOut` (anything it reports).
    public mutating func failed(_ error: TokenEndpointError) -> Step {
        .failed(.unavailable(url: currentURL.description, reason: Self.reason(error), retryAfter: error.retryAfter))
    }

    private static func reason(_ error: TokenEndpointError) -> String {
        switch error {
        case .unreachable(let reason): "unreachable: \(reason)"
        case .timedOut(let seconds): "no answer within \(SecondsText.format(seconds)) s"
        default: error.code
        }
    }
}
