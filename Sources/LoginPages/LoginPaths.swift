import OAuth2

/// The paths of the relay's login pages, and the one URL a person is given to start a browser
/// login (by the admin listener, `oauth-relay login` and `oauth-relay token`).
public enum LoginPaths {
    /// Every login page is below it (`LoginReturn` never returns there).
    public static let prefix = LoginReturn.relayPagesPrefix
    public static let loginPrefix = prefix + "login/"
    public static let statusPrefix = prefix + "status/"

    /// The login start of identity `name`; `returnTo`: where the browser goes afterwards.
    public static func loginPath(_ name: String, returnTo: String?) -> String {
        loginPrefix + name + query(returnTo)
    }

    /// The page that shows where the login of `name` stands.
    public static func statusPath(_ name: String, returnTo: String?) -> String {
        statusPrefix + name + query(returnTo)
    }

    /// The URL that starts the browser login of `identity`: the login path on the origin of its
    /// redirect URI, so that the login's cookie is set for the host the IdP sends the browser
    /// back to. Nil for an identity without a redirect URI (not a browser login).
    public static func loginURL(for identity: Identity) -> String? {
        identity.redirectUri.map { "\($0.scheme.rawValue)://\($0.authority)" + loginPath(identity.name, returnTo: nil) }
    }

    private static func query(_ returnTo: String?) -> String {
        returnTo.map { "?return=" + FormURLEncoding.encode($0) } ?? ""
    }
}
