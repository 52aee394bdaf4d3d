import ArgumentParser
import Config
import FoundationEssentials
import JSON
import Logging
import LoginPages
import OAuth2
import Proxy
import Tokens
import TokenStore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `oauth-relay login --config FILE NAME`: logs a person in for an interactive identity. With a
/// relay running on the configuration (its admin listener answers), that relay starts the
/// login; without one, this command serves the configuration itself until the login ends, and
/// the token store keeps the result for the relay that starts next. It prints the URL to open
/// (a browser login; opened with `xdg-open` on a desktop) or the code to enter and where (a
/// device login; on a terminal also as a QR code, see `LoginQRCode`), and exits 0 once the
/// identity holds a token, 1 when the login fails or times out. An identity that already holds a
/// token is logged in: the command says so and exits 0 at once, unless `--force` switches the
/// person (a device login): the login starts anyway, the tokens held stay in use until its token
/// replaces them, and a login that fails or times out leaves them in place.
struct LoginCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "login",
        abstract: "Log a person in for an interactive identity (authorization_code or device_code).")

    @OptionGroup var options: IdentityCommandOptions

    @Option(name: .long, help: "Give up after this many seconds (default: the identity's loginTimeoutSeconds).")
    var timeout: Double?

    @Flag(name: .long, help: "Only print the login URL; do not open a browser.")
    var noBrowser = false

    @Flag(name: .long, help: "Do not draw a device login's verification URI as a QR code (drawn only on a terminal).")
    var noQr = false

    @Flag(name: .long, help: ArgumentHelp(
        "Start a new login even when the identity is logged in (to switch the person; device_code identities).",
        discussion: "The tokens held stay in use until the new login brings its token, which replaces them; a login that fails or times out leaves them in place."))
    var force = false

    private var name: String { options.name }

    func run() throws {
        let (loaded, identity) = try options.load(command: "login")
        guard identity.grant.isInteractive else {
            throw fail("identity \"\(name)\" in \(options.config) is not one a person logs in to (it needs grant authorization_code or device_code)")
        }
        if force, case .authorizationCode = identity.grant {
            throw fail("--force starts a device login (grant device_code); identity \"\(name)\" logs in with a browser: open its login page "
                 + "(/.oauth-relay/login/\(name) on the relay) to log in again, as anyone, while its token stays in use")
        }
        var watch = LoginWatch(name: name, timeoutSeconds: timeout ?? identity.loginTimeoutSeconds, openBrowser: !noBrowser,
                               qrCode: LoginQRCode.forStandardError(disabled: noQr, logFormat: options.common.logFormat),
                               replacingLogin: force)
        if let admin = loaded.config.admin, try loginThroughRunningRelay(AdminClient(address: admin), &watch) { return }
        try loginInThisProcess(loaded, identity: identity, &watch)
    }

    /// Returns false when no relay answers on the admin listener.
    private func loginThroughRunningRelay(_ admin: AdminClient, _ watch: inout LoginWatch) throws -> Bool {
        let before = try admin.identity(name)
        guard let before else { return false }
        watch.failureBefore = before["lastLoginFailure"]?.string
        guard let started = try admin.call("POST", "/identities/\(name)/login" + (force ? "?force=1" : "")) else {
            throw fail("the running relay did not start the login")
        }
        guard started.status < 300 else {
            throw fail("the running relay did not start the login: " + (started.json["detail"]?.string ?? "HTTP status \(started.status)"))
        }
        // A device login that started cleared the last failure: any failure from now on is its own,
        // even one with the same text as before.
        if force { watch.failureBefore = nil }
        if let url = started.json["loginUrl"]?.string { watch.showLoginURL(url) }
        while true {
            guard let entry = try admin.identity(name) else { throw fail("the relay stopped before the login ended") }
            if let code = watch.observe(LoginWatch.View(json: entry)) { throw ExitCode(code) }
            usleep(500_000)
        }
    }

    private func loginInThisProcess(_ loaded: LoadedConfig, identity: Identity, _ watch: inout LoginWatch) throws {
        let config = loaded.config
        guard config.store != nil
                || (config.defaultStoreAllowed && DefaultStore.directory(environment: ProcessInfo.processInfo.environment) != nil) else {
            throw fail("no relay runs with \(options.config) (its admin listener does not answer), and the configuration keeps no token store: "
                 + "a login made by this command would be lost when it exits. Start the relay, or add \"store\"")
        }
        var exitCode: Int32 = 1
        var watching = watch
        let name = self.name
        FileHandleOutput.standardError("oauth-relay login: no relay is running with this configuration; serving it until the login ends\n")
        var started = false
        try serve(loaded.config, tls: loaded.tls, logger: Logger(label: "oauth-relay"), until: { tokens in
            guard let identity = tokens.tokenSet[name] else { return true }
            if !started {
                started = true
                if case .deviceCode = identity.identity.grant {
                    if !tokens.logins.startDeviceLogin(identity, replacingLogin: force), force {
                        FileHandleOutput.standardError("oauth-relay login: identity \(name) did not start a new device login: "
                                                           + "one is already under way\n")
                        return true
                    }
                } else if let url = LoginPaths.loginURL(for: identity.identity) {
                    watching.showLoginURL(url)
                }
            }
            if let code = watching.observe(LoginWatch.View(status: identity.status(at: monotonicSeconds()))) {
                exitCode = code
                return true
            }
            return false
        })
        throw ExitCode(exitCode)
    }

    /// Prints why the command fails and gives the error that ends it with status 1. Thrown, not
    /// an `exit` here: the command's values (the configuration read) are let go on the way out,
    /// which LeakSanitizer checks at exit.
    private func fail(_ message: String) -> ExitCode {
        FileHandleOutput.standardError("oauth-relay login: \(message)\n")
        return ExitCode(1)
    }
}

/// Follows an identity's login to its end, printing what the person must do.
struct LoginWatch {
    /// Where the login stands, from `/identities` or from the token service.
    struct View {
        var state: String
        var loggedInAs: String?
        var userCode: String?
        var verificationUri: String?
        var verificationUriComplete: String?
        var expiresIn: Int?
        var lastLoginFailure: String?

        init(json: JSONValue) {
            state = json["state"]?.string ?? ""
            loggedInAs = json["loggedInAs"]?.string
            lastLoginFailure = json["lastLoginFailure"]?.string
            if let device = json["deviceLogin"] {
                userCode = device["userCode"]?.string
                verificationUri = device["verificationUri"]?.string
                verificationUriComplete = device["verificationUriComplete"]?.string
                expiresIn = device["expiresIn"]?.integer.map { Int($0) }
            }
        }

        init(status: IdentityStatus) {
            state = status.hasValidToken ? "valid" : status.state.rawValue
            loggedInAs = status.loggedInAs
            lastLoginFailure = status.lastLoginFailure
            userCode = status.deviceLogin?.userCode
            verificationUri = status.deviceLogin?.verificationUri
            verificationUriComplete = status.deviceLogin?.verificationUriComplete
            expiresIn = status.deviceLogin?.expiresIn
        }
    }

    let name: String
    let deadline: Date
    let openBrowser: Bool
    /// Draws the verification URI of a device login; nil where no one would scan it.
    let qrCode: LoginQRCode?
    /// The failure shown before this login started: only a new one ends it.
    var failureBefore: String?
    /// `--force`: the token held is the previous login's, so only a device login that showed its
    /// code and ended without a new failure ends this one.
    let replacingLogin: Bool
    private var shownUserCode: String?

    init(name: String, timeoutSeconds: Double, openBrowser: Bool, qrCode: LoginQRCode?, replacingLogin: Bool = false) {
        self.name = name
        self.replacingLogin = replacingLogin
        deadline = Date(timeIntervalSinceNow: timeoutSeconds)
        self.openBrowser = openBrowser
        self.qrCode = qrCode
    }

    func showLoginURL(_ url: String) {
        FileHandleOutput.standardError("To log in for identity \(name), open:\n\n  \(url)\n\n")
        let environment = ProcessInfo.processInfo.environment
        guard openBrowser, environment["DISPLAY"] != nil || environment["WAYLAND_DISPLAY"] != nil,
              FileManager.default.isExecutableFile(atPath: BrowserOpener.opener) else { return }
        BrowserOpener.open(url)
    }

    /// The exit code once the login has ended (0: logged in), nil while it goes on.
    mutating func observe(_ view: View) -> Int32? {
        // A forced login's end: its code went away, and no new failure came with it (a refusal
        // leaves the previous person's token valid).
        let loginOver = !replacingLogin || (shownUserCode != nil && view.userCode == nil && view.lastLoginFailure == failureBefore)
        if loginOver, view.state == "valid" || view.state == "refreshing" {
            FileHandleOutput.standardError("Logged in for identity \(name)" + (view.loggedInAs.map { " as \($0)" } ?? "") + ".\n")
            return 0
        }
        if let code = view.userCode, code != shownUserCode, let uri = view.verificationUri {
            shownUserCode = code
            // The device authorization cleared the last failure: any failure from now on is this login's.
            failureBefore = view.lastLoginFailure
            var text = "To log in for identity \(name), open \(uri) and enter the code:\n\n  \(code)\n\n"
            if let complete = view.verificationUriComplete { text += "(or open \(complete))\n" }
            if let expiresIn = view.expiresIn { text += "The code expires in \(expiresIn) s.\n" }
            if let qrCode { text += qrCode.text(for: view.verificationUriComplete ?? uri) }
            FileHandleOutput.standardError(text)
        }
        if let failure = view.lastLoginFailure, failure != failureBefore {
            FileHandleOutput.standardError("oauth-relay login: the login failed: \(failure)\n")
            return 1
        }
        if Date() >= deadline {
            FileHandleOutput.standardError("oauth-relay login: the login did not complete in time\n")
            return 1
        }
        return nil
    }
}
