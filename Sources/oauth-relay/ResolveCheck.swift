// `oauth-relay check --resolve`: after a valid check, what each identity would learn, read-only.
// Provider discovery for every identity with an issuer, and the `auto` chain (RFC 9728, RFC 8414,
// RFC 7591) for every `auto` identity, each request sent and waited for on a loop of its own. The
// chain stops before registering: it says what it would register and where. A registration kept
// in Redis (`store.redis`, read only) or in the file store is shown with its client id. Never a secret.

import Config
import Endpoints
import EventLoop
import FoundationEssentials
import HTTPClient
import HTTPFields
import OAuth2
import Proxy
import TLS
import Tokens
import TokenStore

/// Runs on the calling thread; every request blocks it until answered or timed out.
struct ResolveCheck {
    let config: RelayConfig
    let tls: ClientTLS
    let limits: HTTPClientLimits
    /// The registrations the file store keeps, read only, when there is one already (nothing is
    /// created, renamed or written).
    let store: KeptClients?
    /// The replicas' Redis (`store.redis`), read before the file store as the relay does.
    var shared: SharedStoreSettings? = nil

    /// What one identity resolved to, as lines to print; `failure` when it cannot resolve.
    struct Report {
        var lines: [String] = []
        var failure: String?
    }

    /// The report of each identity, by name, sorted.
    func run() -> [(name: String, report: Report)] {
        let resourceTLS = resourceTLS(config, tls)
        return config.identities.keys.sorted().map { name in
            let identity = config.identities[name]!
            if identity.auto != nil { return (name, resolve(identity, resourceTLS: resourceTLS[name])) }
            return (name, discover(identity))
        }
    }

    // MARK: - Discovery

    private func discover(_ identity: Identity) -> Report {
        var report = Report()
        guard let issuer = identity.issuer else {
            report.lines.append("token endpoint: \(identity.tokenUrl.map(redactedURL) ?? "-") (configuration)")
            report.lines.append("client id: \(identity.clientAuth.clientId ?? "-") (configuration)")
            return report
        }
        report.lines.append("issuer: \(issuer) (configuration)")
        do throws(DiscoveryError) {
            var discovery = try ProviderDiscovery(issuer: issuer, allowInsecureHTTP: identity.allowInsecureTokenUrl)
            var step = ProviderDiscovery.Step.fetch(discovery.firstURL)
            while true {
                switch step {
                case .fetch(let url):
                    switch get(url, tls: tls.identities[identity.name]) {
                    case .success(let reply): step = discovery.received(reply, unixTime: Date().timeIntervalSince1970)
                    case .failure(let error): step = discovery.failed(error)
                    }
                case .found(let metadata):
                    let endpoints = try IdentityEndpoints(identity: identity, metadata: metadata, documentURL: discovery.currentURL.description)
                    report.lines.append("metadata: \(redactedURL(discovery.currentURL)) (discovery)")
                    report.lines.append("token endpoint: \(redactedURL(endpoints.token)) (\(identity.tokenUrl == nil ? "discovery" : "configuration"))")
                    report.lines.append("client id: \(identity.clientAuth.clientId ?? "-") (configuration)")
                    if let scope = identity.scope { report.lines.append("scope: \(scope) (configuration)") }
                    return report
                case .failed(let error):
                    throw error
                }
            }
        } catch {
            report.failure = "\(error.code): \(error)"
            return report
        }
    }

    // MARK: - The auto chain

    private func resolve(_ identity: Identity, resourceTLS: TLSConfiguration?) -> Report {
        var report = Report()
        var resolution = AutoResolution(identity: identity)
        var step = resolution.firstStep
        var wouldRegister: ClientRegistrationRequest?
        func answered(_ result: Result<TokenEndpointReply, TokenEndpointError>) -> AutoResolution.Step {
            switch result {
            case .success(let reply): resolution.received(reply, unixTime: Date().timeIntervalSince1970)
            case .failure(let error): resolution.failed(error)
            }
        }
        while true {
            switch step {
            case .fetch(let url, let toResource):
                step = answered(get(url, tls: toResource ? resourceTLS : tls.identities[identity.name]))
            case .probe(let url):
                step = answered(send("GET", url, headers: [], tls: resourceTLS, headOnly: true))
            case .loadClient(let key):
                var kept: RegisteredClient?
                if let shared {
                    switch SharedRegistrationRead.read(key, settings: shared) {
                    case .found(let client): kept = client
                    case .none: break
                    case .unusable(let reason): report.lines.append("shared store: the registration kept is not used: \(reason)")
                    case .unavailable(let reason): report.lines.append("shared store: not read: \(reason)")
                    }
                }
                if kept == nil, let store {
                    do {
                        kept = try store.read(key)
                    } catch {
                        report.lines.append("store: \(error)")
                    }
                }
                step = resolution.loaded(kept, unixTime: Date().timeIntervalSince1970)
            case .register(let request):
                // Read-only: no registration. What the answer would make of it, with no client yet.
                wouldRegister = request
                let placeholder = "{\"client_id\":\"-\",\"client_secret\":\"-\"}"
                step = resolution.received(TokenEndpointReply(status: 201, headers: [("Content-Type", "application/json")], body: placeholder),
                                           unixTime: Date().timeIntervalSince1970)
            case .resolved(let resolved):
                report.lines += Self.lines(resolved.facts, tokenEndpoint: resolved.endpoints.token, wouldRegister: wouldRegister)
                return report
            case .failed(let error):
                report.lines.append("resource: \(identity.auto!.resource)")
                report.failure = "\(error.code): \(error.description)"
                return report
            }
        }
    }

    static func lines(_ facts: AutoFacts, tokenEndpoint: HTTPURL, wouldRegister: ClientRegistrationRequest?) -> [String] {
        var lines = [
            "resource: \(facts.resource)",
            "resource metadata: \(facts.resourceMetadataURL) (\(facts.resourceMetadataSource.rawValue))",
            "authorization server: \(facts.authorizationServer) (\(facts.authorizationServerSource.rawValue))",
            "token endpoint: \(redactedURL(tokenEndpoint)) (discovery)",
        ]
        if let request = wouldRegister {
            var what = ["client_name \"\(request.clientName)\"", "grant_types \(request.grantTypes.joined(separator: " "))",
                        "token_endpoint_auth_method \(request.tokenEndpointAuthMethod)"]
            if !request.redirectURIs.isEmpty { what.append("redirect_uris \(request.redirectURIs.joined(separator: " "))") }
            if request.initialAccessToken != nil { what.append("with the initial access token") }
            lines.append("client id: none yet: would register at \(redactedURL(request.endpoint)): \(what.joined(separator: ", "))")
        } else {
            lines.append("client id: \(facts.clientId) (\(facts.clientSource.rawValue), \(facts.tokenEndpointAuthMethod))")
        }
        lines.append("scope: " + (facts.scope.map { "\($0) (\(facts.scopeSource?.rawValue ?? "-"))" } ?? "none"))
        return lines
    }

    // MARK: - Requests

    private func get(_ url: HTTPURL, tls: TLSConfiguration?) -> Result<TokenEndpointReply, TokenEndpointError> {
        send("GET", url, headers: [HTTPField(name: "Accept", value: "application/json")], tls: tls)
    }

    /// One request, waited for on a loop of its own; no redirect is followed. `headOnly`: its
    /// status and header fields only (the probe: HTTPClientRequest.completesAtHead).
    private func send(_ method: String, _ url: HTTPURL, headers: [HTTPField], tls: TLSConfiguration?,
                      headOnly: Bool = false) -> Result<TokenEndpointReply, TokenEndpointError> {
        if url.scheme == .https && tls == nil {
            return .failure(.unreachable(reason: "no TLS configuration for the https endpoint \(redactedURL(url))"))
        }
        let loop: EventLoop
        do {
            loop = try EventLoop()
        } catch {
            return .failure(.unreachable(reason: "no event loop: \(error)"))
        }
        defer { try? loop.close() }
        let started = Date().timeIntervalSince1970
        var outcome: Result<HTTPClientResponse, HTTPClientError>?
        var request = HTTPClientRequest(method: method, host: url.host, port: url.port, target: url.requestTarget, headers: headers,
                                        tls: url.scheme == .https ? tls : nil)
        request.completesAtHead = headOnly
        _ = sendHTTPRequest(request, on: loop, limits: limits) { outcome = $0 }
        loop.run()
        switch outcome {
        case .success(let response):
            return .success(TokenEndpointReply(status: response.status, headers: response.headers, body: response.body))
        case .failure(.responseTimeout), .failure(.connectTimeout):
            return .failure(.timedOut(seconds: Date().timeIntervalSince1970 - started))
        case .failure(let error):
            return .failure(.unreachable(reason: error.description))
        case nil:
            return .failure(.unreachable(reason: "no answer"))
        }
    }
}
