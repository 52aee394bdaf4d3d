import Crypto
import Endpoints
import JSON
import SafeText

// The registration endpoint's answer read into a `RegisteredClient` (RFC 7591 §3.2), and what
// the relay can do with a registered client: authenticate with it (`clientAuth`), and reuse it
// (`isUsable`).

extension RegisteredClient {
    /// The methods the relay can authenticate with once registered (the server may register
    /// another than the one asked for: its answer wins).
    static let usableMethods = ["none", "client_secret_basic", "client_secret_post", "private_key_jwt"]

    /// Reads the answer to `request`, sent to the server `issuer` at `unixTime`: a 201 (or a 200,
    /// which Glewlwyd answers) with a JSON object holding `client_id`, and `client_secret` when
    /// the method registered needs one. `privateKeyPEM`: the key generated for `private_key_jwt`.
    ///
    /// Errors never quote the answer's secrets: only RFC 7591 §3.2.2's `error` and
    /// `error_description` of a refusal are quoted (cleaned, at most 200 characters).
    public static func parse(_ reply: TokenEndpointReply, to request: ClientRegistrationRequest, issuer: String,
                             privateKeyPEM: Secret?, unixTime: Double) throws(AutoSetupError) -> RegisteredClient {
        do throws(AutoSetupError) {
            return try parseAnswer(reply, to: request, issuer: issuer, privateKeyPEM: privateKeyPEM, unixTime: unixTime)
        } catch .registrationRefused(let url, let status, let oauthError, let description) where request.initialAccessTokenWithheld {
            throw .initialAccessTokenWithheld(issuer: ErrorText.clean(issuer, removing: []), refusal: .registrationRefused(
                url: url, status: status, oauthError: oauthError, description: description))
        }
    }

    private static func parseAnswer(_ reply: TokenEndpointReply, to request: ClientRegistrationRequest, issuer: String,
                                    privateKeyPEM: Secret?, unixTime: Double) throws(AutoSetupError) -> RegisteredClient {
        let url = redactedURL(request.endpoint)
        let secrets = [request.initialAccessToken?.value].compactMap { $0 }
        let status = reply.status
        if status >= 500 || status == 429 || status == 408 {
            let retryAfter = reply.header("Retry-After").flatMap { RetryAfter.seconds($0, unixTime: unixTime) }
            throw .unavailable(url: url, reason: "it answered HTTP \(status)", retryAfter: retryAfter)
        }
        let members = (try? JSONValue(parsing: reply.body))?.dictionary
        if let error = members?["error"]?.string, !error.isEmpty {
            throw .registrationRefused(url: url, status: status, oauthError: ErrorText.clean(error, removing: secrets),
                                       description: members?["error_description"]?.string.map { ErrorText.clean($0, removing: secrets) })
        }
        guard status == 200 || status == 201 else {
            let location = (300..<400).contains(status)
                ? reply.header("Location").map { "a redirect to \(ErrorText.location($0, removing: secrets)), which is not followed" }
                    ?? "a redirect, which is not followed"
                : nil
            // A body that names a client's secrets is never quoted, whatever its status.
            let text = String(decoding: reply.body, as: UTF8.self).lowercased()
            let excerpt = ["client_secret", "registration_access_token"].contains(where: text.contains) ? nil
                : ErrorText.excerpt(of: reply, format: TokenResponseFormat(), removing: secrets)
            throw .registrationRefused(url: url, status: status, oauthError: nil, description: location ?? excerpt)
        }
        guard reply.mediaType == "application/json" else {
            throw .invalidDocument(url: url, reason: "the registration answer is \(reply.mediaType ?? "without a content type"), "
                                   + "not application/json")
        }
        guard let members else { throw .invalidDocument(url: url, reason: "the registration answer is not a JSON object") }
        return try RegisteredClient(members: members, url: url, request: request, issuer: issuer, privateKeyPEM: privateKeyPEM,
                                    unixTime: unixTime)
    }

    private init(members: [String: JSONValue], url: String, request: ClientRegistrationRequest, issuer: String,
                 privateKeyPEM: Secret?, unixTime: Double) throws(AutoSetupError) {
        func string(_ name: String) throws(AutoSetupError) -> String? {
            guard let value = members[name], value != .null else { return nil }
            guard let text = value.string else { throw .invalidDocument(url: url, reason: "\(name) of the registration answer is not a string") }
            return text
        }
        guard let clientId = try string("client_id"), !clientId.isEmpty else {
            throw .invalidDocument(url: url, reason: "the registration answer has no client_id")
        }
        let method = try string("token_endpoint_auth_method") ?? request.tokenEndpointAuthMethod
        guard Self.usableMethods.contains(method), method != "private_key_jwt" || privateKeyPEM != nil else {
            throw .invalidDocument(url: url, reason: "the server registered the client for token_endpoint_auth_method "
                                   + "\"\(ErrorText.clean(method, removing: []))\", which the relay cannot use")
        }
        let secret = try string("client_secret").flatMap { $0.isEmpty ? nil : Secret($0) }
        if method.hasPrefix("client_secret_"), secret == nil {
            throw .invalidDocument(url: url, reason: "the registration answer has no client_secret for \(method)")
        }
        var expiresAt: Double?
        if let value = members["client_secret_expires_at"], value != .null {
            guard let seconds = value.double else {
                throw .invalidDocument(url: url, reason: "client_secret_expires_at of the registration answer is not a number")
            }
            expiresAt = seconds
        }
        var managementURI: HTTPURL?
        if let text = try string("registration_client_uri") {
            do throws(HTTPURLSyntaxError) {
                managementURI = try HTTPURL(absolute: text)
            } catch {
                throw .invalidDocument(url: url, reason: "registration_client_uri of the registration answer is not an absolute "
                                       + "http(s) URL: \(ErrorText.clean(error.message, removing: []))")
            }
            // Its requests carry the registration access token: https (http to loopback for a
            // loopback issuer only), at the registration endpoint's origin or the issuer's.
            if let managementURI, !LoopbackHTTP.allows(managementURI, namedBy: issuer) {
                throw .insecureURL(what: "the registration_client_uri the registration endpoint \(url) answered", url: redactedURL(managementURI))
            }
            if let managementURI, !managementURI.hasSameOrigin(as: request.endpoint),
               !((try? HTTPURL(absolute: issuer)).map { managementURI.hasSameOrigin(as: $0) } ?? false) {
                throw .invalidDocument(url: url, reason: "registration_client_uri of the registration answer (\(redactedURL(managementURI))) "
                                       + "is neither on the registration endpoint's origin nor on the issuer's")
            }
        }
        self.init(issuer: issuer, clientId: clientId, clientSecret: secret, clientSecretExpiresAt: expiresAt,
                  registrationAccessToken: try string("registration_access_token").flatMap { $0.isEmpty ? nil : Secret($0) },
                  registrationClientUri: managementURI, tokenEndpointAuthMethod: method,
                  privateKeyPEM: method == "private_key_jwt" ? privateKeyPEM : nil, redirectUri: request.redirectURIs.first,
                  registeredAt: unixTime)
    }

    /// How the identity authenticates with this client; nil when it cannot (a method the relay
    /// does not use, a secret or key missing, a key that does not read).
    public var clientAuth: ClientAuth? {
        switch tokenEndpointAuthMethod {
        case "none": return .publicClient(id: clientId)
        case "client_secret_basic": return clientSecret.map { .basic(id: clientId, secret: $0) }
        case "client_secret_post": return clientSecret.map { .post(id: clientId, secret: $0) }
        case "private_key_jwt":
            guard let privateKeyPEM, let key = try? PrivateKey(pem: privateKeyPEM.value),
                  let jwk = try? GeneratedClientKey.publicJWK(of: key),
                  let assertionKey = try? ClientAssertionKey(keyPEM: privateKeyPEM.value, algorithm: .es256, keyID: jwk.keyID)
            else { return nil }
            return .privateKeyJWT(id: clientId, key: assertionKey)
        default: return nil
        }
    }

    /// May be used again for `key` at `unixTime`: registered at the same issuer for the same
    /// callback, with a method the relay can authenticate with, and a secret that has not
    /// expired (nor expires within the minute). The auth method asked for (`key.clientAuth`) is
    /// part of the store's key, so it is not compared again.
    public func isUsable(for key: RegistrationKey, at unixTime: Double) -> Bool {
        guard issuer == key.issuer, redirectUri == key.redirectUri, clientAuth != nil else { return false }
        guard let expiresAt = clientSecretExpiresAt, expiresAt > 0, clientSecret != nil else { return true }
        return expiresAt > unixTime + 60
    }
}
