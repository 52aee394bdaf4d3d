import Endpoints
import HTTPFields

/// A GitHub App installation's token request, as GitHub's REST API documents it ("Create an
/// installation access token for an app"): `POST {api}/app/installations/{id}/access_tokens`
/// with `Accept: application/vnd.github+json`, `X-GitHub-Api-Version`, a `User-Agent` (GitHub
/// refuses a request without one) and, when the identity narrows the token, a JSON body with
/// `repositories`, `repository_ids` and `permissions`. Its `Authorization: Bearer` is the App JWT,
/// signed fresh just before sending (`withClientAssertion`). The identity's `headers` come last
/// and replace any of these of the same name.
extension TokenRequest {
    /// The request to `url`, the installation's access-token endpoint (`GitHubAppInstallation.accessTokensURL`).
    init(gitHubApp installation: GitHubAppInstallation, identity: Identity, url: HTTPURL) {
        let headers = [
            HTTPField(name: "Accept", value: GitHubAppInstallation.mediaType),
            HTTPField(name: "X-GitHub-Api-Version", value: GitHubAppInstallation.apiVersion),
            HTTPField(name: "User-Agent", value: RelayVersion.userAgent),
        ]
        let pending = PendingGitHubAppJWT(issuer: installation.appID, key: installation.key)
        self.init(purpose: .grant(.gitHubAppInstallation), url: url, headers: headers,
                  content: .gitHubApp(installation.requestBody, pendingJWT: pending), identity: identity, secrets: [])
    }
}
