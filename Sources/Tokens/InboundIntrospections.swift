// InboundIntrospections: routes' questions about callers' opaque tokens, on the token loop. A
// question goes to the route's configured introspection endpoint, or to the one its issuer's
// metadata names (discovered once per source, the questions that come meanwhile held until it
// is known), through `Introspections` (one question per token under way). Each outcome is counted
// (`TokenObserver.introspectionEnded`) and handed to the question's completion.

import Endpoints
import FoundationEssentials
import Logging
import OAuth2

/// Runs on the token loop only.
final class InboundIntrospections {
    private let idp: IdPClient
    private let logger: Logger
    private let observer: (any TokenObserver)?
    private let introspections: Introspections
    /// Questions held while their source's endpoint is discovered, by source.
    private var discovering: [ObjectIdentifier: [IntrospectionQuestion]] = [:]

    init(idp: IdPClient, logger: Logger, observer: (any TokenObserver)?) {
        self.idp = idp
        self.logger = logger
        self.observer = observer
        introspections = Introspections(idp: idp, logger: logger)
    }

    func ask(_ question: IntrospectionQuestion) {
        let source = question.source
        if let endpoint = source.configuredEndpoint ?? source.discoveredEndpoint { return send(question, to: endpoint) }
        let key = ObjectIdentifier(source)
        if discovering[key] != nil { return discovering[key]!.append(question) }
        discovering[key] = [question]
        do throws(DiscoveryError) {
            let discovery = try ProviderDiscovery(issuer: source.issuer)
            step(.fetch(discovery.firstURL), of: discovery, for: source)
        } catch {
            discovered(nil, failure: error, for: source)
        }
    }

    private func send(_ question: IntrospectionQuestion, to endpoint: HTTPURL) {
        let source = question.source
        introspections.introspect(question.token, for: source.tokens, at: endpoint, rules: source.rules, presentedAs: .bearer,
                                  maximumReuseSeconds: source.maximumReuseSeconds) { [self] outcome in
            if case .failed = outcome, source.configuredEndpoint == nil, source.discoveredEndpoint == endpoint {
                // Discovered again next time: the issuer may have moved it.
                source.discoveredEndpoint = nil
            }
            observer?.introspectionEnded(identity: source.tokens.identity.name, outcome: Self.label(outcome))
            question.completion(outcome)
        }
    }

    private func step(_ step: ProviderDiscovery.Step, of discovery: ProviderDiscovery, for source: IntrospectionSource) {
        switch step {
        case .fetch(let url):
            idp.getJSON(url, tls: source.discoveryTLS, stopped: { [self] in stopped(source) }) { [self] result in
                var discovery = discovery
                switch result {
                case .success(let reply): self.step(discovery.received(reply, unixTime: Date().timeIntervalSince1970), of: discovery, for: source)
                case .failure(let error): self.step(discovery.failed(error), of: discovery, for: source)
                }
            }
        case .found(let metadata):
            guard let endpoint = metadata.introspectionEndpoint else {
                return discovered(nil, failure: .invalidDocument(url: redactedURL(discovery.currentURL), reason: "it names no introspection_endpoint"),
                                  for: source)
            }
            discovered(endpoint, failure: nil, for: source)
        case .failed(let error):
            discovered(nil, failure: error, for: source)
        }
    }

    /// Discovery ended: the held questions go to `endpoint`, or each hears `failure`.
    private func discovered(_ endpoint: HTTPURL?, failure: DiscoveryError?, for source: IntrospectionSource) {
        let held = discovering.removeValue(forKey: ObjectIdentifier(source)) ?? []
        guard let endpoint else {
            let failure = failure ?? .invalidDocument(url: source.issuer, reason: "it names no introspection_endpoint")
            logger.warning("introspection endpoint not found", metadata: ["issuer": .string(source.issuer), "error": .string(failure.description)])
            let error = TokenEndpointError.discovery(failure)
            for question in held {
                observer?.introspectionEnded(identity: source.tokens.identity.name, outcome: "failed")
                question.completion(.failed(error))
            }
            return
        }
        source.discoveredEndpoint = endpoint
        for question in held { send(question, to: endpoint) }
    }

    private func stopped(_ source: IntrospectionSource) {
        for question in discovering.removeValue(forKey: ObjectIdentifier(source)) ?? [] { question.completion(.stopped) }
    }

    /// The label of `oauth_relay_inbound_introspections_total{outcome}`.
    static func label(_ outcome: IntrospectionOutcome) -> String {
        switch outcome {
        case .answered(.active, _, _): "active"
        case .answered(.inactive, _, _): "inactive"
        case .failed: "failed"
        case .overloaded: "overloaded"
        case .stopped: "stopped"
        }
    }
}
