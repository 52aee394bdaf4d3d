import FoundationEssentials
import JSON
import OAuth2

/// Reading a Google service-account identity: `serviceAccountKeyFile` (the JSON key, read by
/// OAuth2's `ServiceAccountKey.parse`), which of Google's two ways its tokens come (`scope`: the
/// token endpoint's jwt-bearer grant; `audience`, or `scope` with `selfSignedJwt`: a JWT the relay
/// signs itself, AIP-4111), `serviceAccountSubject` (domain-wide delegation), and the identity keys
/// that mean nothing beside a key file (the key file is the client and its credentials).
struct ServiceAccountDecoding {
    let context: DecodingContext

    /// The keys of a service-account identity only.
    static let keys = ["serviceAccountKeyFile", "serviceAccountSubject", "selfSignedJwt"]

    /// Keys a service account never uses, and why.
    static let unusedKeys: [(keys: [String], why: String)] = [
        (["clientId", "clientSecret", "clientSecretFile", "clientAuth", "clientKeyFile", "clientKeyId", "clientAssertionAlg",
          "clientAssertionAudience", "clientCertFile", "clientCertHeaders", "sendClientIdWithAssertion", "clientAssertionFile"],
         "the key file names the account (client_email) and its private_key signs the requests"),
        (["username", "password", "passwordFile", "refreshToken", "refreshTokenFile", "assertion", "assertionFile", "subjectToken",
          "subjectTokenFile", "subjectTokenType", "actorToken", "actorTokenFile", "actorTokenType"],
         "the relay signs the service account's jwt-bearer assertion itself"),
        (["issuer"], "the key file's token_uri is the token endpoint (tokenUrl overrides it)"),
        (["resource"], "Google's token endpoint takes no resource indicators"),
        (["dpop"], "Google issues service accounts Bearer tokens"),
        (GitHubAppDecoding.keys, "it is a GitHub App's key (grant github_app_installation), not a Google service account's"),
    ]

    /// Keys a self-signed service account does not use either: it sends no request.
    static let unusedWhenSelfSigned = ["tokenUrl", "params", "headers", "tls", "allowInsecureTokenUrl", "defaultExpiresInSeconds",
                                       "responseFields"]

    /// The grant of an identity with `serviceAccountKeyFile` (`key`: the file read, nil when it
    /// could not be), from its `grant` (client_credentials, the default, or jwt-bearer), `scope`,
    /// `audience`, `selfSignedJwt` and `serviceAccountSubject`; nil once a problem is reported.
    func decodeGrant(_ object: ObjectReader, key: ServiceAccountKey?, grant: GrantType?, scope: String?, audience: String?) -> Grant? {
        if let grant, grant != .clientCredentials, grant != .jwtBearer, let field = object.field("grant") {
            context.report("a service account (serviceAccountKeyFile) gets its tokens with Google's jwt-bearer grant: "
                           + "use client_credentials (the default) or \(GrantType.jwtBearer), not \(grant)", at: field)
        }
        for (keys, why) in Self.unusedKeys {
            for name in keys {
                if let field = object.field(name) { context.report("\(name) is not used with serviceAccountKeyFile: \(why)", at: field) }
            }
        }
        if let params = object.field("params"), case .object(let members) = params.value.kind,
           let member = members.first(where: { $0.key == "assertion" }) {
            context.report("assertion is the service account's signed JWT; it is not set in params",
                           at: params.path.key("assertion"), offset: member.keyOffset)
        }
        let subject = object.nonEmptyString("serviceAccountSubject")
        guard let token = decodeToken(object, scope: scope, audience: audience, subject: subject), let key else { return nil }
        let grant = ServiceAccountGrant(key: key, token: token)
        if grant.isSelfSigned, key.keyID == nil, let field = object.field("serviceAccountKeyFile"),
           let path = context.files.existingFile(field) {
            // Google's APIs find the public key of a self-signed JWT by its kid only.
            context.report("a self-signed JWT names its key by kid, the key file's private_key_id, which this file has not: \(path)",
                           at: field)
            return nil
        }
        return .serviceAccount(grant)
    }

    /// Which way the tokens come: `audience` makes a self-signed JWT for that API, `scope` asks
    /// the token endpoint, or with `"selfSignedJwt": true` goes in a self-signed JWT's `scope`
    /// claim. Never both (AIP-4111: a self-signed JWT names one or the other; the token endpoint
    /// takes no audience).
    private func decodeToken(_ object: ObjectReader, scope: String?, audience: String?, subject: String?) -> ServiceAccountGrant.Token? {
        let selfSigned = object.bool("selfSignedJwt")
        let token: ServiceAccountGrant.Token
        switch (scope, audience) {
        case (_?, _?):
            context.report("set scope (a token from the token endpoint, or a self-signed JWT's scope claim) or audience (a self-signed "
                           + "JWT for that API), not both: Google's JWTs name one or the other", at: object.field("audience")!)
            return nil
        case (nil, let audience?):
            if selfSigned == false, let field = object.field("selfSignedJwt") {
                context.report("audience makes a self-signed JWT for that API (Google's token endpoint takes no audience); "
                               + "use scope for a token from the token endpoint", at: field)
                return nil
            }
            token = .selfSignedAudience(audience)
        case (let scope?, nil):
            token = selfSigned == true ? .selfSignedScope(scope) : .tokenEndpoint(scope: scope, subject: subject)
        case (nil, nil):
            context.report("required with serviceAccountKeyFile (or audience, for a self-signed JWT)", at: object.path.key("scope"),
                           offset: object.lastOffset)
            return nil
        }
        switch token {
        case .tokenEndpoint: break
        case .selfSignedAudience, .selfSignedScope: checkSelfSignedKeys(object)
        }
        return token
    }

    /// A self-signed JWT is made by the relay and acts as the account itself: no request, so none
    /// of the request's keys, and no one else's `sub`.
    private func checkSelfSignedKeys(_ object: ObjectReader) {
        for name in Self.unusedWhenSelfSigned {
            if let field = object.field(name) {
                context.report("\(name) is not used by a self-signed JWT: the relay makes the token itself, with no token request",
                               at: field)
            }
        }
        if let field = object.field("serviceAccountSubject") {
            context.report("domain-wide delegation needs the token endpoint (scope without audience or selfSignedJwt): "
                           + "a self-signed JWT acts as the service account itself", at: field)
        }
    }

    /// The service-account keys of an identity without `serviceAccountKeyFile`.
    func checkKeysWithoutKeyFile(_ object: ObjectReader) {
        for name in Self.keys.dropFirst() {
            if let field = object.field(name) { context.report("\(name) is only used with serviceAccountKeyFile", at: field) }
        }
    }
}

extension ReferencedFiles {
    /// The service-account key in the JSON file a field names (`serviceAccountKeyFile`), or nil
    /// once the problem is reported: no such file, unreadable, not a usable key. Messages name
    /// the file and the member at fault, never a value.
    func serviceAccountKey(inFile field: Field) -> ServiceAccountKey? {
        guard let path = existingFile(field), let data = contents(of: path, at: field) else { return nil }
        do throws(ServiceAccountKeyError) {
            return try ServiceAccountKey.parse(json: String(decoding: data, as: UTF8.self))
        } catch {
            context.report("\(error): \(path)", at: field)
            return nil
        }
    }
}
