// CredentialFileWatcher: on the main thread's loop, every `limits.credentialFilePollSeconds`, looks
// at (stats, never reads) the files the configuration in force names for long-lived objects — TLS
// certificates, keys and CA bundles of the listener, the routes and the identities' token
// endpoints, DPoP key files, the store's key file, the forward proxy's ca.pem (ForwardCA
// .watchingCertificate) — and when one changed, re-applies that
// configuration (Reloader.reapply), so a rotation needs neither a restart nor a SIGHUP.
//
// What counts as a change, decided with no I/O, is WatchedFiles' (`FileIdentity`: a Kubernetes
// `..data` swap, an in-place rewrite, a delete-then-create). A re-apply that fails (a file missing
// or half-written mid-rotation) changes nothing; it is warned about once per outage
// (`RotationOutage`) and retried at every poll until it applies: what failed may be a file the
// watcher does not look at (a `clientSecretFile` mid delete-then-create), and a renewed
// certificate must not wait for the next change of a watched one.

import AdminAPI
import Config
import EventLoop
import Logging
import WatchedFiles

final class CredentialFileWatcher {
    /// Set once in `init`; nil after `close`.
    private var timer: LoopTimer?
    private var changes: WatchedFileChanges
    private var outage = RotationOutage.none
    private var intervalSeconds = 0
    /// The changed files the failing re-apply was for (the retries' log lines name them).
    private var pending: [WatchedFile] = []
    private let reapply: (String) -> ReloadOutcome
    private let logger: Logger

    /// Watches `config`'s files from the versions it read (`WatchedFile.atLoad`: a rotation since is
    /// a change at the first poll); `reapply(trigger)` puts the configuration in force again.
    init(loop: EventLoop, config: RelayConfig, logger: Logger, reapply: @escaping (String) -> ReloadOutcome) {
        self.reapply = reapply
        self.logger = logger
        changes = WatchedFileChanges(filesAtLoad: config.watchedFiles)
        timer = LoopTimer(loop: loop) { [unowned self] in poll() }
        schedule(config)
    }

    /// A configuration was put in force (a reload, or a re-apply): watch its files, at its interval
    /// (a new one from the version it read).
    func follow(_ config: RelayConfig) {
        changes.follow(filesAtLoad: config.watchedFiles)
        schedule(config)
    }

    func close() {
        timer?.close()
        timer = nil
    }

    private func schedule(_ config: RelayConfig) {
        let seconds = config.limits.credentialFilePollSeconds
        guard let timer else { return }
        if changes.files.isEmpty {
            timer.stop()
            intervalSeconds = 0
        } else if seconds != intervalSeconds {
            intervalSeconds = seconds
            let milliseconds = UInt64(seconds) * 1000
            timer.start(afterMilliseconds: milliseconds, repeatMilliseconds: milliseconds)
        }
    }

    private func poll() {
        let observed = Self.observe(changes.paths)
        let newlyChanged = changes.changed(in: observed)
        guard outage.reapplies(filesChanged: !newlyChanged.isEmpty) else { return }
        // Held before the re-apply reads the files: a change made while it does is seen next time.
        changes.adopt(observed)
        let changed = pending + newlyChanged.filter { !pending.contains($0) }
        let trigger = (newlyChanged.isEmpty ? "retry, file changed: " : "file changed: ")
            + changed.map(\.description).joined(separator: ", ")
        let files: Logger.MetadataValue = .array(changed.map { .string($0.description) })
        switch reapply(trigger) {
        case .applied:
            pending = []
            if outage.record(applied: true) == .applied(afterOutage: true) {
                logger.info("changed credential files applied; the earlier failure is over", metadata: ["files": files])
            }
        case .rejected(let errors):
            pending = changed
            // Errors name settings and files (and OpenSSL's reason), never a file's content.
            let metadata: Logger.Metadata = ["files": files, "errors": .array(errors.map { .string($0) })]
            switch outage.record(applied: false) {
            case .warnOutageStarted:
                logger.warning("\(Self.outageWarning)", metadata: metadata)
            default:
                logger.debug("a changed credential file still cannot be applied", metadata: metadata)
            }
        }
    }

    static let outageWarning = "a changed credential file could not be applied; the configuration in force stays, "
        + "and it is tried again at every poll until it applies"

    private static func observe(_ paths: [String]) -> [String: FileIdentity?] {
        var observed: [String: FileIdentity?] = [:]
        for path in paths { observed[path] = FileIdentity.observe(path: path) }
        return observed
    }
}
