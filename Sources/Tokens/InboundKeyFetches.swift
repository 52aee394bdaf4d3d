// InboundKeyFetches: reads inbound issuers' signing keys on the token thread, through IdPClient:
// the JWKS at the route's `jwksUrl`, or at the `jwks_uri` of the issuer's metadata (discovery, as
// for identities). The outcome is published to the issuer's InboundKeys, which wakes the requests
// waiting for it. When to fetch is InboundKeyState's decision, taken by the workers; a fetch posted
// here is always one they started.

import Endpoints
import FoundationEssentials
import JOSE
import Logging
import OAuth2

/// Runs on the token loop only.
final class InboundKeyFetches {
    private let idp: IdPClient
    private let logger: Logger
    private let observer: (any TokenObserver)?

    init(idp: IdPClient, logger: Logger, observer: (any TokenObserver)?) {
        self.idp = idp
        self.logger = logger
        self.observer = observer
    }

    /// Reads the issuer's JWKS (its metadata first when the URL is neither configured nor known).
    func fetch(_ keys: InboundKeys) {
        if let url = keys.jwksUrl ?? keys.discoveredJWKSURL { return read(url, for: keys) }
        do throws(DiscoveryError) {
            let discovery = try ProviderDiscovery(issuer: keys.issuer)
            step(.fetch(discovery.firstURL), of: discovery, for: keys)
        } catch {
            failed(error.description, outcome: "refused", for: keys)
        }
    }

    private func step(_ step: ProviderDiscovery.Step, of discovery: ProviderDiscovery, for keys: InboundKeys) {
        switch step {
        case .fetch(let url):
            idp.getJSON(url, tls: keys.tls, stopped: stopped(keys)) { [self] result in
                var discovery = discovery
                switch result {
                case .success(let reply): self.step(discovery.received(reply, unixTime: Date().timeIntervalSince1970), of: discovery, for: keys)
                case .failure(let error): self.step(discovery.failed(error), of: discovery, for: keys)
                }
            }
        case .found(let metadata):
            guard let jwks = metadata.jwksUri else {
                return failed("the issuer's metadata at \(redactedURL(discovery.currentURL)) names no jwks_uri", outcome: "refused", for: keys)
            }
            keys.discoveredJWKSURL = jwks
            read(jwks, for: keys)
        case .failed(let error):
            failed(error.description, outcome: error.isTemporary ? "unavailable" : "refused", for: keys)
        }
    }

    private func read(_ url: HTTPURL, for keys: InboundKeys) {
        idp.getJSON(url, tls: keys.tls, stopped: stopped(keys)) { [self] result in
            switch result {
            case .success(let reply) where (200..<300).contains(reply.status):
                do throws(JOSEError) {
                    let set = try JWKSet(json: reply.body)
                    guard !set.keys.isEmpty else {
                        return failed("the JWKS at \(redactedURL(url)) holds no key the relay can use", outcome: "refused", for: keys,
                                      forgetting: url)
                    }
                    let now = monotonicSeconds()
                    keys.publish { $0.fetched(set, at: now) }
                    observer?.jwksFetched(issuer: keys.issuer, outcome: "ok")
                    logger.info("issuer keys read", metadata: ["issuer": .string(keys.issuer), "keys": .stringConvertible(set.keys.count),
                                                                "skipped": .stringConvertible(set.skippedCount)])
                } catch {
                    failed("the JWKS at \(redactedURL(url)) is not usable: \(error)", outcome: "refused", for: keys, forgetting: url)
                }
            case .success(let reply):
                failed("the JWKS at \(redactedURL(url)) answered HTTP \(reply.status)", outcome: reply.status >= 500 ? "unavailable" : "refused",
                       for: keys, forgetting: url)
            case .failure(let error):
                failed("the JWKS at \(redactedURL(url)) could not be read: \(error)", outcome: "unavailable", for: keys, forgetting: url)
            }
        }
    }

    /// Once stopping, a fetch under way is cancelled: the requests waiting for it are told.
    private func stopped(_ keys: InboundKeys) -> () -> Void {
        { keys.publish { $0.fetchFailed("the relay is stopping") } }
    }

    /// `forgetting`: a discovered URL that failed is discovered again next time.
    private func failed(_ reason: String, outcome: String, for keys: InboundKeys, forgetting url: HTTPURL? = nil) {
        if let url, keys.jwksUrl == nil, keys.discoveredJWKSURL == url { keys.discoveredJWKSURL = nil }
        keys.publish { $0.fetchFailed(reason) }
        observer?.jwksFetched(issuer: keys.issuer, outcome: outcome)
        logger.warning("issuer keys not read", metadata: ["issuer": .string(keys.issuer), "error": .string(reason)])
    }
}
