import Crypto
import Endpoints
import JOSE
import JSON

/// A GitHub App installation's access tokens (`"grant": "github_app_installation"`): who the App
/// is (its `appID` and private key, which sign the App JWT), which installation the token acts
/// for, and what narrows it (`repositories`, `repositoryIDs`, `permissions`; none: everything the
/// installation was granted). Not OAuth: the request is `POST
/// {api}/app/installations/{id}/access_tokens` with the App JWT as its Bearer credential and a
/// JSON body (`TokenRequest+GitHubApp.swift`), the answer GitHub's own shape
/// (`GitHubTokenAnswer`). The identity's `tokenUrl` is that URL (`accessTokensURL(api:)`), so the
/// lifecycle, the TLS settings and the plain-http rule treat it as the identity's token endpoint.
///
/// The description names the App and the installation, never the key.
public struct GitHubAppInstallation: Sendable, Equatable, CustomStringConvertible {
    /// The App JWT's `iss`: the App's numeric ID, or its client ID (`Iv1.…`, `Iv23…`), which
    /// GitHub accepts too and recommends.
    public var appID: String
    /// The App's private key: RSA, signing RS256 (`appKey(pem:)`).
    public var key: ClientAssertionKey
    public var installationID: Int64
    /// Repository names (without their owner) the token is limited to; empty: not limited by name.
    public var repositories: [String]
    /// Repository IDs the token is limited to; empty: not limited by ID.
    public var repositoryIDs: [Int64]
    /// Permissions the token is limited to, by GitHub's name (`contents`, `issues`, …); empty:
    /// the App's permissions on the installation.
    public var permissions: [String: GitHubPermissionLevel]

    /// GitHub.com's REST API; GitHub Enterprise Server's is `https://HOST/api/v3`.
    public static let defaultAPIURL = HTTPURL(scheme: .https, host: "api.github.com")
    /// The `Accept` GitHub documents for its REST API.
    public static let mediaType = "application/vnd.github+json"
    /// The REST API version the relay speaks (`X-GitHub-Api-Version`): the version whose
    /// installation-token request and answer it follows.
    public static let apiVersion = "2022-11-28"

    public init(appID: String, key: ClientAssertionKey, installationID: Int64, repositories: [String] = [],
                repositoryIDs: [Int64] = [], permissions: [String: GitHubPermissionLevel] = [:]) {
        self.appID = appID
        self.key = key
        self.installationID = installationID
        self.repositories = repositories
        self.repositoryIDs = repositoryIDs
        self.permissions = permissions
    }

    /// The installation's access-token endpoint under the REST API at `api` (its path a prefix,
    /// such as GitHub Enterprise Server's `/api/v3`).
    public func accessTokensURL(api: HTTPURL) -> HTTPURL {
        var base = api.path
        while base.hasSuffix("/") { base.removeLast() }
        return HTTPURL(scheme: api.scheme, host: api.host, port: api.port,
                       path: "\(base)/app/installations/\(installationID)/access_tokens")
    }

    /// The request's JSON body: `repositories`, `repository_ids` and `permissions` (by name), each
    /// only when set; nil when none is, and the request has no body.
    public var requestBody: JSONValue? {
        var members: [JSONMember] = []
        if !repositories.isEmpty {
            members.append(JSONMember("repositories", .array(repositories.map(JSONValue.string))))
        }
        if !repositoryIDs.isEmpty {
            members.append(JSONMember("repository_ids", .array(repositoryIDs.map(JSONValue.integer))))
        }
        if !permissions.isEmpty {
            let sorted = permissions.sorted { $0.key < $1.key }
            members.append(JSONMember("permissions", .object(sorted.map { JSONMember($0.key, .string($0.value.rawValue)) })))
        }
        return members.isEmpty ? nil : .object(members)
    }

    /// The App's private key from the PEM text GitHub gave for it (a PKCS#1 RSA key; PKCS#8 is read
    /// too). A pure function of the text: the caller reads the file, when the config loads and
    /// again when the file changes. Errors say what is wrong, never what the text holds.
    public static func appKey(pem: String) throws(GitHubAppKeyError) -> ClientAssertionKey {
        let privateKey: PrivateKey
        do throws(CryptoError) {
            privateKey = try PrivateKey(pem: pem)
        } catch {
            throw .unreadable(reason: error.description)
        }
        guard case .rsa = privateKey.kind else { throw .notRSA(privateKey.kind) }
        do throws(JOSEError) {
            return try ClientAssertionKey(privateKey: privateKey, algorithm: .rs256)
        } catch {
            throw .unreadable(reason: error.description)
        }
    }

    public var description: String {
        "GitHub App \(appID), installation \(installationID)"
    }
}

/// What a GitHub App installation token may do with one permission.
public enum GitHubPermissionLevel: String, Sendable, Equatable, CaseIterable {
    case read
    case write
    case admin
}

/// Why a GitHub App's key cannot sign its JWTs. Names the problem, never key material.
public enum GitHubAppKeyError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Not a PEM private key the relay can use (OpenSSL's reason).
    case unreadable(reason: String)
    /// A private key, but not RSA: GitHub verifies App JWTs with RS256 only.
    case notRSA(KeyKind)

    public var description: String {
        switch self {
        case .unreadable(let reason): "not a usable PEM private key (\(reason))"
        case .notRSA(let kind): "GitHub verifies App JWTs with RS256 only, which needs an RSA key; this is an \(kind) key"
        }
    }
}
