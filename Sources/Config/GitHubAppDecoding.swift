import Endpoints
import HTTPFields
import OAuth2

/// Reads a GitHub App identity (`"grant": "github_app_installation"`): `appId`, `installationId`,
/// `clientKeyFile` (the App's RSA key), `githubApiUrl` and what narrows the token
/// (`repositories`, `repositoryIds`, `permissions`), and reports the OAuth keys such an identity
/// has no use for, each with why. (Other grants refuse this grant's keys: `IdentityKeyChecks`.)
struct GitHubAppDecoding {
    let context: DecodingContext

    /// The keys only this grant uses.
    static let keys = ["appId", "installationId", "githubApiUrl", "repositories", "repositoryIds", "permissions"]

    /// GitHub takes at most this many repositories in one token request.
    static let maximumRepositories = 500

    /// OAuth keys the grant does not use, with why (the grant keys of other grants, `username`,
    /// `refreshToken`, `assertion`, …, are refused as for any grant that does not use them).
    static let unusedKeys: [(key: String, why: String)] = [
        ("tokenUrl", "the token comes from githubApiUrl (default https://api.github.com)"),
        ("issuer", "GitHub's API is not discovered; githubApiUrl names it"),
        ("clientId", "the App JWT's iss is appId, which may hold the App's client ID"),
        ("clientSecret", "a GitHub App signs an App JWT with clientKeyFile and sends no secret"),
        ("clientSecretFile", "a GitHub App signs an App JWT with clientKeyFile and sends no secret"),
        ("clientAuth", "a GitHub App always authenticates with an App JWT signed with clientKeyFile"),
        ("clientAssertionFile", "a GitHub App signs its own App JWT with clientKeyFile"),
        ("clientKeyId", "GitHub's App JWT has no kid"),
        ("clientAssertionAlg", "GitHub verifies App JWTs with RS256 only"),
        ("clientAssertionAudience", "GitHub's App JWT has no aud"),
        ("clientCertFile", "GitHub registers the App's key, not a certificate"),
        ("clientCertHeaders", "GitHub registers the App's key, not a certificate"),
        ("sendClientIdWithAssertion", "the App JWT goes in the Authorization header, with no form"),
        ("scope", "GitHub narrows an installation token with repositories, repositoryIds and permissions"),
        ("audience", "GitHub narrows an installation token with repositories, repositoryIds and permissions"),
        ("resource", "GitHub narrows an installation token with repositories, repositoryIds and permissions"),
        ("params", "the request is GitHub's JSON, not an OAuth form"),
        ("responseFields", "GitHub's answer always has token and expires_at"),
        ("defaultExpiresInSeconds", "GitHub's answer always says when the token expires (expires_at)"),
        ("dpop", "GitHub does not bind installation tokens with DPoP"),
    ]

    /// The REST API's base: `githubApiUrl`, or GitHub.com's when absent; nil once a bad value is
    /// reported.
    func decodeAPIURL(_ object: ObjectReader) -> HTTPURL? {
        guard let field = object.field("githubApiUrl") else { return GitHubAppInstallation.defaultAPIURL }
        return context.parsed(field) { text throws(InvalidValue) in try HTTPURL.parse(text, allowsQuery: false) }
    }

    /// The grant's values, or nil once what is missing or wrong is reported; the keys the grant
    /// does not use are reported too.
    func decodeInstallation(_ object: ObjectReader) -> GitHubAppInstallation? {
        for (key, why) in Self.unusedKeys {
            if let field = object.field(key) {
                context.report("\(key) is not used by the \(GrantType.gitHubAppInstallation) grant: \(why)", at: field)
            }
        }
        let appID = required("appId", in: object).flatMap(decodeAppID)
        let installationID = required("installationId", in: object).flatMap(decodeInstallationID)
        let key = required("clientKeyFile", in: object).flatMap(decodeKey)
        let repositories = object.field("repositories").flatMap(decodeRepositories) ?? []
        let repositoryIDs = object.field("repositoryIds").flatMap(decodeRepositoryIDs) ?? []
        let permissions = object.field("permissions").flatMap(decodePermissions) ?? [:]
        guard let appID, let installationID, let key else { return nil }
        return GitHubAppInstallation(appID: appID, key: key, installationID: installationID, repositories: repositories,
                                     repositoryIDs: repositoryIDs, permissions: permissions)
    }

    private func required(_ key: String, in object: ObjectReader) -> Field? {
        guard let field = object.field(key) else {
            context.report("required for the \(GrantType.gitHubAppInstallation) grant", at: object.path.key(key), offset: object.lastOffset)
            return nil
        }
        return field
    }

    /// `appId`: the App's ID (a number, or its digits as a string) or its client ID (`Iv1.…`,
    /// `Iv23…`), both of which GitHub takes as the App JWT's `iss`.
    private func decodeAppID(_ field: Field) -> String? {
        if case .number = field.value.kind {
            return context.integer(field, in: 1...Int.max, rangeDescription: "the App's ID, a positive integer").map(String.init)
        }
        return context.parsed(field) { text throws(InvalidValue) in
            if Self.isDecimalID(text) { return text }
            let clientIDBytes = text.utf8.dropFirst(2)
            guard text.hasPrefix("Iv"), !clientIDBytes.isEmpty, text.utf8.count <= 64,
                  clientIDBytes.allSatisfy({ ASCII.isAlphanumeric($0) || $0 == UInt8(ascii: ".") }) else {
                throw InvalidValue("expected the App's ID (such as 12345) or its client ID (such as Iv23liAbCdEf01234567), "
                                   + "got \"\(text)\"")
            }
            return text
        }
    }

    /// `installationId`: a positive integer, as a number or its digits.
    private func decodeInstallationID(_ field: Field) -> Int64? {
        if case .number = field.value.kind {
            return context.integer(field, in: 1...Int.max, rangeDescription: "the installation's ID, a positive integer").map(Int64.init)
        }
        return context.parsed(field) { text throws(InvalidValue) in
            guard Self.isDecimalID(text), let id = Int64(text) else {
                throw InvalidValue("expected the installation's ID, a positive integer such as 678, got \"\(text)\"")
            }
            return id
        }
    }

    /// Digits without a leading zero, as GitHub writes its IDs, that fit an Int64.
    private static func isDecimalID(_ text: String) -> Bool {
        guard let first = text.utf8.first, first != UInt8(ascii: "0"), text.utf8.allSatisfy(ASCII.isDigit) else { return false }
        return Int64(text) != nil
    }

    /// `clientKeyFile`: the App's private key, RSA (`GitHubAppInstallation.appKey(pem:)`).
    private func decodeKey(_ field: Field) -> ClientAssertionKey? {
        guard let (pem, path) = context.files.pemText(inFile: field) else { return nil }
        do throws(GitHubAppKeyError) {
            return try GitHubAppInstallation.appKey(pem: pem)
        } catch {
            context.report("\(error): \(path)", at: field)
            return nil
        }
    }

    /// `repositories`: names without their owner (the installation's account owns them).
    private func decodeRepositories(_ field: Field) -> [String]? {
        guard let elements = listElements(field) else { return nil }
        var names: [String] = []
        for element in elements {
            guard let name = context.parsed(element, Self.repositoryName) else { continue }
            if names.contains(name) {
                context.report("repository \"\(name)\" is listed twice", at: element)
            } else {
                names.append(name)
            }
        }
        return names
    }

    /// A repository name as GitHub allows it: letters, digits, `.`, `-`, `_`, at most 100.
    private static func repositoryName(_ text: String) throws(InvalidValue) -> String {
        if text.contains("/") {
            throw InvalidValue("expected a repository's name without its owner (the installation's account owns it), got \"\(text)\"")
        }
        let allowed = text.utf8.allSatisfy {
            ASCII.isAlphanumeric($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_")
        }
        guard (1...100).contains(text.utf8.count), allowed, text != ".", text != ".." else {
            throw InvalidValue("expected a repository name (letters, digits, \".\", \"-\" and \"_\", at most 100), got \"\(text)\"")
        }
        return text
    }

    /// `repositoryIds`: positive integers.
    private func decodeRepositoryIDs(_ field: Field) -> [Int64]? {
        guard let elements = listElements(field) else { return nil }
        var ids: [Int64] = []
        for element in elements {
            guard let id = context.integer(element, in: 1...Int.max, rangeDescription: "a repository's ID, a positive integer") else {
                continue
            }
            if ids.contains(Int64(id)) {
                context.report("repository ID \(id) is listed twice", at: element)
            } else {
                ids.append(Int64(id))
            }
        }
        return ids
    }

    /// The elements of `repositories` or `repositoryIds`: not empty (an empty list would narrow
    /// nothing), at most `maximumRepositories`.
    private func listElements(_ field: Field) -> [Field]? {
        guard let elements = context.elements(field) else { return nil }
        if elements.isEmpty {
            context.report("an empty list limits nothing; remove the key for a token on every repository of the installation", at: field)
            return nil
        }
        if elements.count > Self.maximumRepositories {
            context.report("GitHub takes at most \(Self.maximumRepositories) repositories in a token request, got \(elements.count)",
                           at: field)
            return nil
        }
        return elements
    }

    /// `permissions`: GitHub's permission names (`contents`, `pull_requests`, …) to `read`,
    /// `write` or `admin`. The names are GitHub's to add to, so any name of its form is taken.
    private func decodePermissions(_ field: Field) -> [String: GitHubPermissionLevel]? {
        guard let members = context.stringMembers(field) else { return nil }
        if members.isEmpty {
            context.report("an empty object limits nothing; remove the key for a token with every permission of the installation",
                           at: field)
            return nil
        }
        var permissions: [String: GitHubPermissionLevel] = [:]
        for (name, value, member) in members {
            let lowercase = UInt8(ascii: "a")...UInt8(ascii: "z")
            let validName = name.utf8.first.map(lowercase.contains) ?? false
                && name.utf8.allSatisfy { lowercase.contains($0) || ASCII.isDigit($0) || $0 == UInt8(ascii: "_") }
            guard validName else {
                context.report("\"\(name)\" is not a GitHub permission name (lower-case letters, digits and \"_\", "
                               + "such as contents or pull_requests)", at: member)
                continue
            }
            guard let level = GitHubPermissionLevel(rawValue: value) else {
                let levels = GitHubPermissionLevel.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ")
                context.report("expected one of \(levels), got \"\(value)\"", at: member)
                continue
            }
            permissions[name] = level
        }
        return permissions
    }
}
