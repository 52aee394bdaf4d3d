import Crypto
import OAuth2

/// A digest of the identity settings a stored token depends on: the client, the token endpoint,
/// the grant (with its user name, or its service account and the user it acts for, not its
/// secrets; a GitHub App's ID and what narrows its token), scope, audience, resource, the extra
/// parameters of a login's authorization request, where the answer's token is read from, the DPoP
/// key's thumbprint and the thumbprint of the client certificate shown to the token endpoint. An
/// entry whose fingerprint differs from the identity's current one is never used, so changing any
/// of them (a new client, another scope, another DPoP key, a renewed certificate) costs a fresh
/// token instead of a token for other settings.
///
/// Secrets are left out entirely, not hashed: the fingerprint is stored in the clear in the
/// entry's header, and a digest of a low-entropy password could be guessed offline. A rotated
/// client secret keeps the token, which was issued to the same client.
public struct SettingsFingerprint: Sendable, Equatable, CustomStringConvertible {
    public static let byteCount = 32
    public let bytes: [UInt8]

    public init(bytes: [UInt8]) {
        precondition(bytes.count == Self.byteCount, "a settings fingerprint is 32 bytes")
        self.bytes = bytes
    }

    /// SHA-256 over a canonical encoding: each part as a label and a length-prefixed value, in a
    /// fixed order, so no two different settings encode alike.
    public init(_ identity: Identity) {
        var parts: [(String, String?)] = [
            ("format", "1"),
            ("tokenUrl", identity.tokenUrl?.description),
            ("clientAuth", identity.clientAuth.name),
            ("clientId", identity.clientAuth.clientId),
            ("grant", identity.grant.grantType),
            ("scope", identity.scope),
            ("audience", identity.audience),
        ]
        // A discovered token endpoint is named by its issuer (added only then, so entries of
        // identities with a configured token URL keep their fingerprint).
        if identity.tokenUrl == nil { parts.append(("issuer", identity.issuer)) }
        if case .password(let username, _) = identity.grant { parts.append(("username", username)) }
        // A GitHub App's installation is in its token URL; its repositories and permissions too
        // decide what the token may do (added only for this grant, so other entries keep theirs).
        if case .gitHubAppInstallation(let installation) = identity.grant {
            parts.append(("gitHubAppID", installation.appID))
            parts.append(("gitHubTokenLimits", installation.requestBody?.serialized))
        }
        // A service account's key file names the client (and domain-wide delegation the user):
        // another account in the file, or another user, costs a fresh token.
        if let account = identity.grant.serviceAccount {
            parts.append(("serviceAccount", account.key.clientEmail))
            if case .tokenEndpoint(_, let subject) = account.token { parts.append(("serviceAccountSubject", subject)) }
        }
        for resource in identity.resource { parts.append(("resource", resource)) }
        // What a person consents to (Slack's `user_scope`, Auth0's `audience`), and which of an
        // answer's tokens is taken (Slack's bot or user token). Added only when set, so entries
        // of identities without them keep their fingerprint.
        for (name, value) in identity.authorizationParams.sorted(by: { $0.key < $1.key }) {
            parts += [("authorizationParamName", name), ("authorizationParamValue", value)]
        }
        if identity.responseFields.token != ResponseFields().token {
            parts.append(("responseToken", identity.responseFields.token.description))
        }
        // A DPoP-bound token is useless with any other key: the key's thumbprint (public) is part
        // of the settings. Only for identities with a key file; without DPoP the encoding is the
        // one entries were written with before DPoP existed, so they still open.
        if case .key(let key) = identity.dpop { parts.append(("dpopKeyThumbprint", key.thumbprint)) }
        // The same for a token endpoint's client certificate (RFC 8705 certificate-bound tokens):
        // a renewed certificate costs a fresh token, not a token bound to the one it replaced.
        if let thumbprint = identity.tls?.clientCertThumbprint { parts.append(("clientCertThumbprint", thumbprint)) }
        // A grant on behalf of the caller: the subject token's type, the actor token's type and
        // the extra form parameters (`requested_token_type`…) decide what is issued. Added only for
        // these grants, so other entries keep their fingerprint. The actor token itself is a
        // secret: it enters the caller entries' names instead (CallerEntryName, a keyed MAC).
        if case .caller(let grant) = identity.grant {
            if case .tokenExchange(let subjectTokenType, let actor) = grant {
                parts += [("subjectTokenType", subjectTokenType), ("actorTokenType", actor.type)]
            }
            for (name, value) in identity.params.sorted(by: { $0.key < $1.key }) {
                parts += [("paramName", name), ("paramValue", value)]
            }
        }
        var encoding: [UInt8] = []
        for (label, value) in parts {
            Self.append(label, to: &encoding)
            if let value {
                encoding.append(1)
                Self.append(value, to: &encoding)
            } else {
                encoding.append(0)
            }
        }
        self.init(bytes: SHA256.hash(encoding))
    }

    private static func append(_ text: String, to encoding: inout [UInt8]) {
        let bytes = Array(text.utf8)
        let count = UInt32(bytes.count)
        encoding += [UInt8(count >> 24 & 0xff), UInt8(count >> 16 & 0xff), UInt8(count >> 8 & 0xff), UInt8(count & 0xff)]
        encoding += bytes
    }

    /// The first 8 bytes in hex: enough to tell two apart in a log.
    public var description: String {
        bytes.prefix(8).map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
    }
}
