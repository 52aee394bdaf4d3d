import Endpoints
import OAuth2

/// Reads the top-level `auto` object into `AutoDefaults`: what the identities made for routes
/// with `"identity": "auto"` start from (`AutoIdentities` makes them). Each key is checked on
/// its own here; the rules that need the listeners and routes are `AutoIdentities`'.
struct AutoDecoding {
    let context: DecodingContext

    static let autoKeys = [
        "allowedIssuers", "clientName", "clientAuth", "initialAccessToken", "initialAccessTokenFile", "scope", "grant",
        "allowRemoteUse", "redirectUri", "loginTimeoutSeconds",
    ]

    func decodeAuto(_ field: Field) -> AutoDefaults? {
        guard let object = ObjectReader(field, knownKeys: Self.autoKeys, in: context) else { return nil }
        var auto = AutoDefaults()
        auto.allowedIssuers = object.field("allowedIssuers").flatMap(decodeIssuers) ?? auto.allowedIssuers
        auto.clientName = object.nonEmptyString("clientName") ?? auto.clientName
        auto.clientAuth = object.parsed("clientAuth") { text throws(InvalidValue) in
            guard let method = AutoClientAuth(rawValue: text) else {
                throw InvalidValue("expected one of \(Self.quotedList(AutoClientAuth.allCases.map(\.rawValue))), got \"\(text)\"")
            }
            return method
        } ?? auto.clientAuth
        auto.initialAccessToken = object.secret("initialAccessToken")
        if auto.initialAccessToken != nil, let path = object.filePath("initialAccessTokenFile") {
            auto.initialAccessTokenFile = CredentialFile(role: .initialAccessToken, path: path, key: "initialAccessTokenFile")
        }
        auto.scope = object.field("scope").flatMap { context.stringOrStrings($0) }?.map(\.value).joined(separator: " ")
        auto.grant = object.parsed("grant") { text throws(InvalidValue) in
            guard let grant = AutoGrant(rawValue: text) else {
                throw InvalidValue("expected \(Self.quotedList(AutoGrant.allCases.map(\.rawValue))) (a person logs in), got \"\(text)\"")
            }
            return grant
        } ?? auto.grant
        auto.allowRemoteUse = object.bool("allowRemoteUse") ?? auto.allowRemoteUse
        auto.redirectUri = object.parsed("redirectUri") { url throws(InvalidValue) in try HTTPURL.parse(url, allowsQuery: false) }
        if auto.grant == .deviceCode, let field = object.field("redirectUri") {
            context.report("redirectUri is only used by the authorization_code grant, not by the device_code grant auto.grant sets",
                           at: field)
        }
        auto.loginTimeoutSeconds = object.seconds("loginTimeoutSeconds")
        return auto
    }

    /// Issuer identifiers (RFC 8414 §2): https URLs without query or fragment (http only to a
    /// loopback host, for tests), each listed once, written in canonical form (`canonicalIssuer`:
    /// an issuer is compared as a string with the one the resource names, which would otherwise
    /// never match). An empty list is refused: leaving the key out is what allows any issuer.
    private func decodeIssuers(_ field: Field) -> [String]? {
        guard let elements = context.elements(field) else { return nil }
        guard !elements.isEmpty else {
            context.report("must list at least one issuer; leave allowedIssuers out to allow any https issuer "
                           + "(only when every listener is loopback)", at: field)
            return nil
        }
        var issuers: [String] = []
        for element in elements {
            guard let issuer = context.parsed(element, Self.issuer) else { continue }
            if issuers.contains(issuer) {
                context.report("\"\(issuer)\" is listed twice", at: element)
            } else {
                issuers.append(issuer)
            }
        }
        return issuers.count == elements.count ? issuers : nil
    }

    private static func issuer(_ text: String) throws(InvalidValue) -> String {
        let url = try HTTPURL.parse(text, allowsQuery: false)
        guard url.scheme == .https || HostSyntax.isLoopback(url.host) else {
            throw InvalidValue("an issuer must be an https URL (http only to a loopback host), got \"\(text)\"")
        }
        let canonical = canonicalIssuer(text, url)
        guard canonical == text else {
            throw InvalidValue("\"\(text)\" is not in canonical form (lowercase scheme and host, no default port, no trailing "
                               + "slash after a path): write \"\(canonical)\", as the server publishes its issuer")
        }
        return text
    }

    /// `text` (parsed as `url`) as an issuer is published: the scheme and host lowercased, the
    /// default port dropped, the path as written but for its trailing slashes (a lone "/" kept).
    static func canonicalIssuer(_ text: String, _ url: HTTPURL) -> String {
        // `url` parsed from `text`, so the separator is there; without it, no path to keep.
        let afterScheme = text.firstRange(of: "://").map { text[$0.upperBound...] } ?? ""
        var path = Substring(afterScheme.drop { $0 != "/" })
        while path.count > 1 && path.hasSuffix("/") { path = path.dropLast() }
        return url.scheme.rawValue + "://" + url.authority + path
    }

    private static func quotedList(_ names: [String]) -> String {
        let quoted = names.map { "\"\($0)\"" }
        return quoted.dropLast().joined(separator: ", ") + " or " + quoted[quoted.count - 1]
    }
}
