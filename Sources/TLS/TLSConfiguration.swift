internal import COpenSSL
import Crypto

/// What every TLS connection of one route, identity or listener shares: an `SSL_CTX` with its
/// trust, certificates and protocol limits, the SPKI pins, and (clients) the session cache.
///
/// Built once, at start-up or reload, then shared by every loop thread. OpenSSL allows a
/// context to be used from many threads as long as nobody changes it, and nothing does after
/// `client(...)` or `server(...)` returns; the only mutable state, the session cache, is behind
/// a mutex. Hence `@unchecked Sendable`.
///
/// Always: TLS 1.2 minimum, no renegotiation; ALPN `http/1.1` for HTTP connections (a Redis
/// connection offers no ALPN: Redis has no protocol name).
public final class TLSConfiguration: @unchecked Sendable {
    public enum Role: Sendable { case client, server }

    /// Whether a server asks for client certificates (mutual TLS), and which CAs it trusts for them.
    public enum ClientCertificates: Sendable {
        case notRequested
        /// Asked for; a certificate that is sent must verify, but a client may send none.
        case optional(caFile: String)
        /// A client without a verifiable certificate is refused.
        case required(caFile: String)
    }

    public let role: Role
    let context: OpaquePointer
    /// SNI and the checked name instead of the URL host (clients).
    let serverName: String?
    /// Whether the peer's certificate is verified: on unless `insecureSkipVerify` (clients), on
    /// with `ClientCertificates.optional`/`.required` (servers).
    let verifiesPeer: Bool
    let pins: SPKIPins
    let sessions = ClientSessionCache()

    private init(role: Role, context: OpaquePointer, serverName: String?, verifiesPeer: Bool, pins: SPKIPins) {
        self.role = role
        self.context = context
        self.serverName = serverName
        self.verifiesPeer = verifiesPeer
        self.pins = pins
    }

    deinit {
        SSL_CTX_free(context)
    }

    /// A configuration for connections to a server (an https upstream or a token endpoint).
    ///
    /// - Parameters:
    ///   - caFile: PEM file of CA certificates trusted in addition to the system store
    ///     (`/etc/ssl/certs`), or instead of it when `trustSystemRoots` is false.
    ///   - serverName: SNI and checked name when they differ from the URL's host.
    ///   - pinnedSPKISHA256: SHA-256 digests of SubjectPublicKeyInfos (`sha256/<base64>` pins,
    ///     decoded); when not empty, a chain without one of these keys fails (see `SPKIPins`).
    ///   - clientCertificateFile, clientKeyFile: PEM certificate (chain) and key for mutual TLS.
    ///   - insecureSkipVerify: accept any certificate for any name (pins still apply).
    ///   - offersHTTP11: ALPN `http/1.1` in the ClientHello; false for a protocol that is not HTTP.
    public static func client(caFile: String? = nil, trustSystemRoots: Bool = true, serverName: String? = nil,
                              pinnedSPKISHA256: [[UInt8]] = [], clientCertificateFile: String? = nil,
                              clientKeyFile: String? = nil, insecureSkipVerify: Bool = false, offersHTTP11: Bool = true)
        throws(TLSConfigurationError) -> TLSConfiguration {
        for (index, pin) in pinnedSPKISHA256.enumerated() where pin.count != SPKIPins.digestLength {
            throw TLSConfigurationError("pins[\(index)]", "not a \(SPKIPins.digestLength)-byte SHA-256 digest")
        }
        // Built around the context first, so that a failure below frees it (in `deinit`).
        let configuration = TLSConfiguration(role: .client, context: try makeContext(TLS_client_method()),
                                             serverName: serverName, verifiesPeer: !insecureSkipVerify,
                                             pins: SPKIPins(digests: pinnedSPKISHA256))
        let context = configuration.context
        if insecureSkipVerify {
            SSL_CTX_set_verify(context, SSL_VERIFY_NONE, nil)
        } else {
            SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
            if trustSystemRoots, SSL_CTX_set_default_verify_paths(context) != 1 {
                throw TLSConfigurationError("trust", "cannot load the system trust store: \(OpenSSLErrors.takeReason(fallback: "unknown error"))")
            }
        }
        if let caFile { try trust(caFile, setting: "caFile", in: context) }
        switch (clientCertificateFile, clientKeyFile) {
        case let (certificate?, key?):
            try useIdentity(certificateFile: certificate, keyFile: key, settings: ("clientCert", "clientKey"), in: context)
        case (nil, nil):
            break
        case (nil, _?):
            throw TLSConfigurationError("clientCert", "required when clientKey is set")
        case (_?, nil):
            throw TLSConfigurationError("clientKey", "required when clientCert is set")
        }
        let protocols = alpnProtocols
        if offersHTTP11, SSL_CTX_set_alpn_protos(context, protocols.utf8Start, UInt32(protocols.utf8CodeUnitCount)) != 0 {
            throw TLSConfigurationError("alpn", "cannot offer http/1.1")
        }
        shim_SSL_CTX_set_client_session_cache(context)
        SSL_CTX_sess_set_new_cb(context, sessionArrived)
        return configuration
    }

    /// A configuration for accepting TLS connections (`listenTls`, and the tests' servers).
    public static func server(certificateFile: String, keyFile: String,
                              clientCertificates: ClientCertificates = .notRequested)
        throws(TLSConfigurationError) -> TLSConfiguration {
        try server(clientCertificates: clientCertificates) { context throws(TLSConfigurationError) in
            try useIdentity(certificateFile: certificateFile, keyFile: keyFile, settings: ("certFile", "keyFile"), in: context)
        }
    }

    /// A configuration for accepting TLS connections with a certificate made in memory (the
    /// forward proxy's leaves): `certificateChain` leaf first, then what the server sends after
    /// it; `key` is the leaf's. No client certificates are asked for.
    public static func server(certificateChain: [X509Certificate], key: PrivateKey) throws(TLSConfigurationError) -> TLSConfiguration {
        try server(clientCertificates: .notRequested) { context throws(TLSConfigurationError) in
            guard let leaf = certificateChain.first else { throw TLSConfigurationError("certificate", "no certificate in the chain") }
            guard SSL_CTX_use_certificate(context, leaf.pointer) == 1 else {
                throw TLSConfigurationError("certificate", "cannot use the certificate: \(OpenSSLErrors.takeReason(fallback: "unknown reason"))")
            }
            for certificate in certificateChain.dropFirst() where shim_SSL_CTX_add1_chain_cert(context, certificate.pointer) != 1 {
                throw TLSConfigurationError("certificate", "cannot add a chain certificate: \(OpenSSLErrors.takeReason(fallback: "unknown reason"))")
            }
            guard SSL_CTX_use_PrivateKey(context, key.openSSLKey) == 1 else {
                throw TLSConfigurationError("key", "cannot use the private key: \(OpenSSLErrors.takeReason(fallback: "unknown reason"))")
            }
            guard SSL_CTX_check_private_key(context) == 1 else {
                OpenSSLErrors.clear()
                throw TLSConfigurationError("key", "the key is not the certificate's")
            }
        }
    }

    /// What every server configuration has: the context, its identity (`installIdentity`), the
    /// client certificates asked for, the session id context and ALPN.
    private static func server(clientCertificates: ClientCertificates,
                               installIdentity: (OpaquePointer) throws(TLSConfigurationError) -> Void)
        throws(TLSConfigurationError) -> TLSConfiguration {
        let verifies = if case .notRequested = clientCertificates { false } else { true }
        let configuration = TLSConfiguration(role: .server, context: try makeContext(TLS_server_method()),
                                             serverName: nil, verifiesPeer: verifies, pins: SPKIPins(digests: []))
        let context = configuration.context
        try installIdentity(context)
        switch clientCertificates {
        case .notRequested:
            SSL_CTX_set_verify(context, SSL_VERIFY_NONE, nil)
        case .optional(let caFile), .required(let caFile):
            try trust(caFile, setting: "clientCaFile", in: context)
            guard let names = SSL_load_client_CA_file(caFile) else {
                throw TLSConfigurationError("clientCaFile", "no CA certificate in \(caFile)")
            }
            SSL_CTX_set_client_CA_list(context, names)
            let required = if case .required = clientCertificates { SSL_VERIFY_FAIL_IF_NO_PEER_CERT } else { Int32(0) }
            SSL_CTX_set_verify(context, SSL_VERIFY_PEER | required, nil)
        }
        // Resumed sessions must come from this context; OpenSSL refuses to resume a session of
        // a verified client without an id context.
        let sessionContext: StaticString = "oauth-relay"
        SSL_CTX_set_session_id_context(context, sessionContext.utf8Start, UInt32(sessionContext.utf8CodeUnitCount))
        SSL_CTX_set_alpn_select_cb(context, selectHTTP11, nil)
        return configuration
    }

    /// Tests only, before the configuration is used: no TLS 1.3, to exercise what TLS 1.2 does
    /// differently (the session arrives inside the handshake, before the pin check).
    func limitToTLS12() {
        shim_SSL_CTX_set_max_proto_version(context, TLS1_2_VERSION)
    }

    /// ALPN wire format: one length-prefixed protocol name.
    static let alpnProtocols: StaticString = "\u{08}http/1.1"

    private static func makeContext(_ method: OpaquePointer?) throws(TLSConfigurationError) -> OpaquePointer {
        OpenSSLErrors.clear()
        guard let context = SSL_CTX_new(method) else {
            throw TLSConfigurationError("tls", "cannot create an OpenSSL context: \(OpenSSLErrors.takeReason(fallback: "out of memory"))")
        }
        shim_SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION)
        SSL_CTX_set_options(context, shim_SSL_OP_NO_RENEGOTIATION())
        return context
    }

    private static func trust(_ caFile: String, setting: String, in context: OpaquePointer) throws(TLSConfigurationError) {
        guard SSL_CTX_load_verify_locations(context, caFile, nil) == 1 else {
            throw TLSConfigurationError(setting, "cannot load CA certificates from \(caFile): \(OpenSSLErrors.takeReason(fallback: "no certificate found"))")
        }
    }

    private static func useIdentity(certificateFile: String, keyFile: String, settings: (certificate: String, key: String),
                                    in context: OpaquePointer) throws(TLSConfigurationError) {
        guard SSL_CTX_use_certificate_chain_file(context, certificateFile) == 1 else {
            throw TLSConfigurationError(settings.certificate, "cannot load a certificate from \(certificateFile): \(OpenSSLErrors.takeReason(fallback: "no certificate found"))")
        }
        guard SSL_CTX_use_PrivateKey_file(context, keyFile, SSL_FILETYPE_PEM) == 1 else {
            throw TLSConfigurationError(settings.key, "cannot load a private key from \(keyFile): \(OpenSSLErrors.takeReason(fallback: "no key found"))")
        }
        guard SSL_CTX_check_private_key(context) == 1 else {
            OpenSSLErrors.clear()
            throw TLSConfigurationError(settings.key, "\(keyFile) is not the key of \(certificateFile)")
        }
    }
}

/// ALPN on a server: choose `http/1.1` when the client offers it; otherwise go on without ALPN
/// (a client that offers only h2 then gets HTTP/1.1 or gives up, its choice).
private func selectHTTP11(ssl: OpaquePointer?, selected: UnsafeMutablePointer<UnsafePointer<UInt8>?>?,
                          selectedLength: UnsafeMutablePointer<UInt8>?, offered: UnsafePointer<UInt8>?,
                          offeredLength: UInt32, argument: UnsafeMutableRawPointer?) -> Int32 {
    let supported = TLSConfiguration.alpnProtocols
    let result = selected.map { pointer in
        UnsafeMutableRawPointer(pointer).withMemoryRebound(to: UnsafeMutablePointer<UInt8>?.self, capacity: 1) { out in
            SSL_select_next_proto(out, selectedLength, supported.utf8Start, UInt32(supported.utf8CodeUnitCount),
                                  offered, offeredLength)
        }
    }
    return result == OPENSSL_NPN_NEGOTIATED ? SSL_TLSEXT_ERR_OK : SSL_TLSEXT_ERR_NOACK
}
