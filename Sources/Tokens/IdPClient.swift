// IdPClient: the one place where the token loop talks to identities' IdPs — token requests,
// device authorizations, revocations, and the GETs of provider metadata and JWKS. It makes each
// request with the credentials the identity's files hold now (CredentialFileWatch.swift: files
// that changed are read again, and a request carrying a JWT past its `exp` is not sent), signs it
// (a service account's grant assertion, a client assertion and, to the token endpoint, a DPoP
// proof with the endpoint's latest nonce), sends it with the identity's TLS configuration, maps
// transport failures to token endpoint errors, and sends a token request once more when the
// endpoint asks for a new DPoP nonce.
//
// Stopping is decided here, once for every caller:
//  1. Once stopped, no new request is sent: a caller that gave a `stopped` handler hears it at once.
//  2. Stopping cancels every request under way except the token requests it is told to let finish
//     (those holding their store lock or shared lease: their answer may carry a refresh token the
//     IdP just rotated).
//  3. A cancelled request's completion never runs; its `stopped` handler does, if it has one.
//     A request let finish completes as usual, but is not sent again for a DPoP nonce.

import Crypto
import Endpoints
import EventLoop
import FoundationEssentials
import HTTPClient
import HTTPFields
import Logging
import OAuth2
import SafeText
import TLS

/// Runs on the token loop only.
final class IdPClient {
    private enum Phase {
        case running
        case stopped
    }

    private let loop: EventLoop
    /// The configuration's timeouts and sizes, for every request from now on.
    private(set) var limits: HTTPClientLimits
    private let logger: Logger
    private let observer: (any TokenObserver)?
    /// The TLS configuration of each identity's https endpoints, by slot.
    private var tls: [Int: TLSConfiguration] = [:]
    /// The TLS configuration of each `auto` identity's https resource (its metadata, its
    /// challenge), by slot.
    private var resourceTLS: [Int: TLSConfiguration] = [:]
    /// The credential files of each identity that has some, by slot.
    private var credentialFiles: [Int: CredentialFileWatch] = [:]
    /// Every request to an IdP under way, so stopping can cancel them.
    private let calls = IdPCalls()
    /// The token endpoints' DPoP nonces (TokenEndpointNonces.swift).
    let dpopNonces = TokenEndpointNonces()
    private var phase = Phase.running

    init(loop: EventLoop, limits: HTTPClientLimits, logger: Logger, observer: (any TokenObserver)?) {
        self.loop = loop
        self.limits = limits
        self.logger = logger
        self.observer = observer
    }

    /// A configuration's identities, TLS configurations and limits. Retired identities keep the
    /// TLS configuration they fetched with and their credential files' watch (until `retire`); a
    /// kept identity keeps its watch, and the credentials read since it was loaded.
    func adopt(_ identities: [IdentityTokens], tls: [Int: TLSConfiguration], resourceTLS: [Int: TLSConfiguration] = [:],
               limits: HTTPClientLimits) {
        for (slot, configuration) in tls { self.tls[slot] = configuration }
        for (slot, configuration) in resourceTLS { self.resourceTLS[slot] = configuration }
        for tokens in identities where credentialFiles[tokens.slot] == nil && !tokens.identity.credentialFiles.isEmpty {
            credentialFiles[tokens.slot] = CredentialFileWatch(identity: tokens.identity)
        }
        self.limits = limits
    }

    /// A retired identity is gone: its TLS configuration and its credential files' watch go too.
    func retire(slot: Int) {
        tls[slot] = nil
        resourceTLS[slot] = nil
        credentialFiles[slot] = nil
    }

    /// Any request of `slot` is under way.
    func hasRequest(slot: Int) -> Bool {
        calls.hasRequest(slot: slot)
    }

    /// Once stopped, a fetch's answer is kept for the next process instead of recorded.
    var isStopped: Bool { phase == .stopped }

    /// Sends a token request and parses its answer, sending it once more (a new proof, a new
    /// assertion) when the token endpoint answers `use_dpop_nonce` with a nonce. `completion` gets
    /// the response or why not; not at all for a request stopping cancelled.
    func requestToken(_ unsigned: TokenRequest, for tokens: IdentityTokens,
                      completion: @escaping (Result<TokenResponse, TokenEndpointError>) -> Void) {
        requestToken(unsigned, for: tokens, retryingForNonce: false, completion: completion)
    }

    /// `retryingForNonce`: this is the one retry after a `use_dpop_nonce` answer.
    private func requestToken(_ unsigned: TokenRequest, for tokens: IdentityTokens, retryingForNonce: Bool,
                              completion: @escaping (Result<TokenResponse, TokenEndpointError>) -> Void) {
        let started = monotonicSeconds()
        logger.debug("token request", metadata: ["identity": .string(tokens.identity.name), "purpose": .string("\(unsigned.purpose)")])
        send(unsigned, for: tokens, kind: .tokenRequest) { [self] result, request in
            let outcome: Result<TokenResponse, TokenEndpointError>
            switch result {
            case .success(let reply):
                do throws(TokenEndpointError) {
                    outcome = .success(try request.parseResponse(reply, unixTime: Date().timeIntervalSince1970))
                } catch {
                    outcome = .failure(error)
                }
                if retriesWithNewNonce(reply, outcome: outcome, for: tokens, alreadyRetried: retryingForNonce || phase == .stopped) {
                    return requestToken(unsigned, for: tokens, retryingForNonce: true, completion: completion)
                }
            case .failure(.timedOut):
                outcome = .failure(.timedOut(seconds: monotonicSeconds() - started))
            case .failure(let error):
                outcome = .failure(error)
            }
            completion(outcome)
        }
    }

    /// Sends a request to one of the identity's IdP endpoints (token, device authorization,
    /// revocation), made with the credentials its files hold now; its client assertion (and, to
    /// the token endpoint, its DPoP proof) is signed here, on the token thread and outside the
    /// lifecycle's lock, fresh for every request (their jti is single-use). The completion gets
    /// the answer (or the transport's failure) and the request as sent, also when it could not
    /// be sent; `stopped` runs instead once stopping refused or cancelled it.
    func send(_ unsigned: TokenRequest, for tokens: IdentityTokens, kind: IdPCalls.Kind = .other, stopped: (() -> Void)? = nil,
              completion: @escaping (Result<TokenEndpointReply, TokenEndpointError>, TokenRequest) -> Void) {
        guard phase == .running else {
            stopped?()
            return
        }
        let request: TokenRequest
        do throws(TokenEndpointError) {
            request = try signed(withCurrentCredentials(unsigned, for: tokens), for: tokens)
        } catch {
            return completion(.failure(error), unsigned)
        }
        call(request.method, request.url, headers: request.headers, body: request.body, for: tokens, kind: kind, stopped: stopped) {
            completion($0, request)
        }
    }

    /// A GET of a JSON document of the identity's IdP (its metadata, its JWKS).
    func getJSON(_ url: HTTPURL, for tokens: IdentityTokens, stopped: (() -> Void)? = nil,
                 completion: @escaping (Result<TokenEndpointReply, TokenEndpointError>) -> Void) {
        guard phase == .running else {
            stopped?()
            return
        }
        call("GET", url, headers: [HTTPField(name: "Accept", value: "application/json")], for: tokens, kind: .other, stopped: stopped,
             completion: completion)
    }

    /// A request of an `auto` identity's resolution (AutoResolver.swift): a GET of the resource's
    /// metadata or of the resource itself, an authorization server's metadata, a registration (a
    /// POST), its deletion (RFC 7592). `toResource`: with the resource's TLS configuration
    /// (`AutoSettings.resourceTLS`), else the identity's. No redirect is followed. `headOnly`: the
    /// answer is its status and header fields, the body not read (HTTPClientRequest.completesAtHead).
    func send(_ method: String, _ url: HTTPURL, headers: [HTTPField] = [], body: [UInt8] = [], for tokens: IdentityTokens,
              toResource: Bool, headOnly: Bool = false, stopped: (() -> Void)? = nil,
              completion: @escaping (Result<TokenEndpointReply, TokenEndpointError>) -> Void) {
        guard phase == .running else {
            stopped?()
            return
        }
        call(method, url, headers: headers, body: body, slot: tokens.slot, tls: toResource ? resourceTLS[tokens.slot] : tls[tokens.slot],
             kind: .other, headOnly: headOnly, stopped: stopped, completion: completion)
    }

    /// A GET of a JSON document of an IdP that is no identity's (a route's inbound issuer: its
    /// metadata, its JWKS), with `tls` for an https URL. Cancelled by stopping like any other.
    func getJSON(_ url: HTTPURL, tls: TLSConfiguration?, stopped: (() -> Void)? = nil,
                 completion: @escaping (Result<TokenEndpointReply, TokenEndpointError>) -> Void) {
        guard phase == .running else {
            stopped?()
            return
        }
        call("GET", url, headers: [HTTPField(name: "Accept", value: "application/json")], body: [], slot: nil, tls: tls, kind: .other,
             stopped: stopped, completion: completion)
    }

    /// One HTTP request to the identity's IdP, with the identity's TLS configuration.
    private func call(_ method: String, _ url: HTTPURL, headers: [HTTPField] = [], body: [UInt8] = [], for tokens: IdentityTokens,
                      kind: IdPCalls.Kind, stopped: (() -> Void)?,
                      completion: @escaping (Result<TokenEndpointReply, TokenEndpointError>) -> Void) {
        call(method, url, headers: headers, body: body, slot: tokens.slot, tls: tls[tokens.slot], kind: kind, stopped: stopped,
             completion: completion)
    }

    /// One HTTP request to an IdP, with `configured` for an https URL; transport failures as token
    /// endpoint errors. Tracked (under the identity's `slot`, if any) until it ends, so stopping
    /// can cancel it (`kind`: see `IdPCalls.Kind`).
    private func call(_ method: String, _ url: HTTPURL, headers: [HTTPField], body: [UInt8], slot: Int?, tls configured: TLSConfiguration?,
                      kind: IdPCalls.Kind, headOnly: Bool = false, stopped: (() -> Void)?,
                      completion: @escaping (Result<TokenEndpointReply, TokenEndpointError>) -> Void) {
        let tls = url.scheme == .https ? configured : nil
        if url.scheme == .https && tls == nil {
            return completion(.failure(.unreachable(reason: "no TLS configuration for the https endpoint \(redactedURL(url))")))
        }
        var request = HTTPClientRequest(method: method, host: url.host, port: url.port, target: url.requestTarget,
                                        headers: headers, body: body, tls: tls)
        request.completesAtHead = headOnly
        let started = monotonicSeconds()
        calls.track(slot: slot, kind: kind) { id in
            sendHTTPRequest(request, on: loop, limits: limits) { [self] result in
                // A request stopping cancelled was dropped from `calls`; one let finish was not.
                let letFinish = calls.ended(id)
                guard phase == .running || letFinish else {
                    stopped?()
                    return
                }
                switch result {
                case .success(let response):
                    completion(.success(TokenEndpointReply(status: response.status, headers: response.headers, body: response.body)))
                case .failure(.responseTimeout), .failure(.connectTimeout):
                    completion(.failure(.timedOut(seconds: monotonicSeconds() - started)))
                case .failure(let error):
                    completion(.failure(.unreachable(reason: error.description)))
                }
            }
        }
    }

    /// `request` made with the credentials the identity's files hold now: files that changed are
    /// read again (CredentialFileWatch.swift). Throws, and nothing is sent, when a credential the
    /// request would carry is a JWT whose `exp` has passed.
    private func withCurrentCredentials(_ request: TokenRequest, for tokens: IdentityTokens) throws(TokenEndpointError) -> TokenRequest {
        guard let watch = refreshedCredentials(of: tokens) else { return request }
        if let expired = watch.current.expiredCredential(sentWith: request.purpose, at: Date().timeIntervalSince1970) {
            throw .expiredCredential(expired)
        }
        return watch.request(request)
    }

    /// The identity with the credentials its files hold now (files that changed read again): what
    /// a token the relay signs itself is made with (SelfSignedFetch.swift).
    func currentIdentity(of tokens: IdentityTokens) -> Identity {
        refreshedCredentials(of: tokens)?.current ?? tokens.identity
    }

    /// The credential `role` as the identity's files hold it now (files that changed read again);
    /// nil when no file of the identity holds it.
    func currentCredential(_ role: CredentialRole, of tokens: IdentityTokens) -> Secret? {
        guard let watch = refreshedCredentials(of: tokens), watch.loaded.credentialFiles.contains(where: { $0.role == role }) else {
            return nil
        }
        return watch.current.credential(role)
    }

    /// The identity's watch once its files have been looked at, each change logged; nil for an
    /// identity without credential files.
    private func refreshedCredentials(of tokens: IdentityTokens) -> CredentialFileWatch? {
        guard let watch = credentialFiles[tokens.slot] else { return nil }
        for news in watch.refresh() { log(news, of: tokens.identity.name) }
        return watch
    }

    /// One line per change of a credential file: the identity, the key and the file, never its
    /// content.
    private func log(_ news: CredentialFileNews, of identity: String) {
        func metadata(_ file: CredentialFile) -> Logger.Metadata {
            ["identity": .string(identity), "key": .string(file.key), "file": .string(file.path)]
        }
        switch news {
        case .changed(let file):
            logger.info("credential file changed; its new content is in use", metadata: metadata(file))
        case .unusable(let file, let reason):
            var fields = metadata(file)
            fields["reason"] = .string(reason)
            logger.warning("credential file unusable; the last good content stays in use", metadata: fields)
        case .usableAgain(let file):
            logger.info("credential file usable again", metadata: metadata(file))
        }
    }

        /// `unsigned` as it goes on the wire: with its service account's grant assertion or its client
    /// assertion and, for a DPoP identity, its proof. Signed here, on the token thread, outside the
    /// lifecycle's lock, fresh for every request sent.
    private func signed(_ unsigned: TokenRequest, for tokens: IdentityTokens) throws(TokenEndpointError) -> TokenRequest {
        var random = SecureRandomNumberGenerator()
        let unixTime = IssuedAt.now()
        let request = try unsigned.withGrantAssertion(unixTime: unixTime).withClientAssertion(unixTime: unixTime, random: &random)
        // Proofs go to the token endpoint only (RFC 9449 §5): not a device authorization or a
        // revocation.
        guard unsigned.purpose.isTokenRequest else { return request }
        switch tokens.dpop {
        case nil:
            return request
        case .failure(let error):
            throw .dpopProofFailed(reason: error.description)
        case .success(let key):
            return try request.withDPoPProof(key, nonce: dpopNonces.nonce(for: tokens), unixTime: unixTime, random: &random)
        }
    }

    /// Notes the `DPoP-Nonce` of a token endpoint's `reply` and says whether to send the request
    /// again with it (`TokenEndpointNonces.answer`), logging and counting a retry.
    private func retriesWithNewNonce(_ reply: TokenEndpointReply, outcome: Result<TokenResponse, TokenEndpointError>,
                                     for tokens: IdentityTokens, alreadyRetried: Bool) -> Bool {
        guard tokens.dpop != nil, dpopNonces.answer(reply, outcome: outcome, for: tokens, alreadyRetried: alreadyRetried) else {
            return false
        }
        logger.info("token endpoint asked for a DPoP nonce; sending the request again with it",
                    metadata: ["identity": .string(tokens.identity.name)])
        observer?.dpopNonceRetried(identity: tokens.identity.name, server: "token_endpoint")
        return true
    }

    /// Stops (see the top of this file): every request under way is cancelled except the token
    /// requests of the slots `letFinish` names.
    func stop(lettingFinish letFinish: (Int) -> Bool) {
        phase = .stopped
        calls.cancel(exceptTokenRequestsOf: letFinish)
    }
}
