import Config
import Endpoints
import TLS

/// The TLS configurations the relay connects and listens with, built once from the config (they load
/// certificates and keys, so they are validated at start-up and by `check`).
public struct ClientTLS: Sendable {
    /// By route position (https upstreams only).
    public var routes: [Int: TLSConfiguration] = [:]
    /// By identity name (https token endpoints only).
    public var identities: [String: TLSConfiguration] = [:]
    /// By route position: the discovery and JWKS fetches of routes with `inbound`.
    public var inbound: [Int: TLSConfiguration] = [:]
    /// The TLS listener's certificate and key (`listenTls`).
    public var listener: TLSConfiguration?
    /// The shared token store's connections (`store.tls`, for a `rediss://` `store.redis`).
    public var redis: TLSConfiguration?

    public init() {}

    /// Builds every configuration `config` needs. Errors name their JSON path; each setting that
    /// turns verification off is returned as a warning.
    public static func build(for config: RelayConfig) -> (tls: ClientTLS, errors: [String], warnings: [String]) {
        var tls = ClientTLS()
        var errors: [String] = []
        var warnings: [String] = []
        func make(_ settings: TLSSettings?, path: String, offersHTTP11: Bool = true) -> TLSConfiguration? {
            if settings?.insecureSkipVerify == true {
                warnings.append("\(path).insecureSkipVerify: certificate and host-name verification is OFF for this connection")
            }
            do throws(TLSConfigurationError) {
                return try configuration(settings, offersHTTP11: offersHTTP11)
            } catch {
                errors.append("\(path).\(error.setting): \(error.problem)")
                return nil
            }
        }
        for (position, route) in config.routes.enumerated() where route.upstream.scheme == .https {
            tls.routes[position] = make(upstreamSettings(of: route, in: config), path: "$.routes[\(route.index)].tls")
        }
        for (position, route) in config.routes.enumerated() {
            guard let rules = route.inbound else { continue }
            tls.inbound[position] = make(rules.tls, path: "$.routes[\(route.index)].inbound.tls")
        }
        for name in config.identities.keys.sorted() where config.identities[name]!.mayUseHTTPS {
            tls.identities[name] = make(config.identities[name]!.tls, path: "$.identities.\(name).tls")
        }
        if let settings = config.store?.redis?.tls {
            tls.redis = make(settings, path: "$.store.tls", offersHTTP11: false)
        }
        if let listen = config.listenTls {
            do throws(TLSConfigurationError) {
                tls.listener = try TLSConfiguration.server(
                    certificateFile: listen.certFile, keyFile: listen.keyFile,
                    clientCertificates: listen.clientCaFile.map { .required(caFile: $0) } ?? .notRequested)
            } catch {
                errors.append("$.listenTls.\(error.setting): \(error.problem)")
            }
        }
        return (tls, errors, warnings)
    }

    /// What a route's upstream connections use: its `tls`, and with `certificateBoundUpstream`
    /// its identity's client certificate and key (RFC 8705: the certificate its tokens are bound
    /// to; Config has checked that there is one and that the route sets no other).
    static func upstreamSettings(of route: Route, in config: RelayConfig) -> TLSSettings? {
        guard route.certificateBoundUpstream, let name = route.identity, let identityTLS = config.identities[name]?.tls,
              identityTLS.clientCert != nil else { return route.tls }
        var settings = route.tls ?? TLSSettings()
        settings.clientCert = identityTLS.clientCert
        settings.clientKey = identityTLS.clientKey
        settings.clientCertThumbprint = identityTLS.clientCertThumbprint
        return settings
    }

    static func configuration(_ settings: TLSSettings?, offersHTTP11: Bool = true) throws(TLSConfigurationError) -> TLSConfiguration {
        try TLSConfiguration.client(caFile: settings?.caFile, trustSystemRoots: settings?.trust != .caFileOnly,
                                    serverName: settings?.serverName,
                                    pinnedSPKISHA256: settings?.pinnedSHA256Digests ?? [],
                                    clientCertificateFile: settings?.clientCert, clientKeyFile: settings?.clientKey,
                                    insecureSkipVerify: settings?.insecureSkipVerify ?? false, offersHTTP11: offersHTTP11)
    }
}
