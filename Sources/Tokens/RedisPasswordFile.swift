// RedisPasswordFile: `store.passwordFile`, read again each time the link to Redis opens its
// connections (RedisLink.open), so a password a platform rotates on disk (a Kubernetes Secret, a
// managed Redis's rotated ACL password) is used at the next reconnection without a reload.
//
// Read as every credential file is (FileIdentity: a regular file, at most
// `FileIdentity.credentialSizeLimit` bytes, UTF-8, surrounding white space trimmed, not empty).
// A file that cannot be read or is empty leaves the last good password in use: one warning when
// that begins, one info line when the file is good again (RotationOutage), none in between. No
// message holds the password; they name the file.

import HTTPFields
import Logging
import RedisProtocol
import SafeText
import WatchedFiles

/// Runs on the token loop only.
final class RedisPasswordFile {
    /// The path, resolved against the config file's directory.
    let path: String
    /// The password read last (at load, or at the last connection the file could be read for).
    private(set) var password: Secret
    private var outage = RotationOutage.none

    /// `password`: the file's content as the configuration read it at load.
    init(path: String, loaded password: Secret) {
        self.path = path
        self.password = password
    }

    /// What a look at the file tells the log.
    enum News: Equatable {
        case none
        /// The file cannot be used now (the reason names no content): the last good password stays.
        case unusable(reason: String)
        /// The file is good again after an outage.
        case usableAgain
    }

    /// `topology` with the password to log in with now (`current`) for every node.
    func topology(_ topology: RedisTopology, logger: Logger) -> RedisTopology {
        topology.withCredentials(user: topology.user, password: current(logger: logger))
    }

    /// `endpoint` (the server, or the master the sentinels named) with the password to log in with now.
    func endpoint(_ endpoint: RedisEndpoint, logger: Logger) -> RedisEndpoint {
        var endpoint = endpoint
        endpoint.password = current(logger: logger)
        return endpoint
    }

    /// The password to log in with now: the file read again, or the last good password when it
    /// cannot be (logged once per outage, naming the file).
    func current(logger: Logger) -> Secret {
        switch take(Self.read(path)) {
        case .none: break
        case .unusable(let reason):
            logger.warning("store.passwordFile cannot be read; the last password read from it is used",
                           metadata: ["file": .string(path), "error": .string(reason)])
        case .usableAgain:
            logger.info("store.passwordFile can be read again", metadata: ["file": .string(path)])
        }
        return password
    }

    /// Takes what a read gave (no I/O): a good password replaces the last one; a failure keeps it.
    func take(_ read: Result<Secret, PasswordUnavailable>) -> News {
        switch read {
        case .success(let password):
            self.password = password
            return outage.record(applied: true) == .applied(afterOutage: true) ? .usableAgain : .none
        case .failure(let unavailable):
            return outage.record(applied: false) == .warnOutageStarted ? .unusable(reason: unavailable.description) : .none
        }
    }

    /// The trimmed content of the file at `path`, or why there is none.
    static func read(_ path: String) -> Result<Secret, PasswordUnavailable> {
        let bytes: [UInt8]
        switch FileIdentity.current(of: path).flatMap({ $0.contents(limit: FileIdentity.credentialSizeLimit) }) {
        case .failure(let unavailable): return .failure(.file(unavailable))
        case .success(let read): bytes = read
        }
        guard let text = String(validating: bytes, as: UTF8.self) else { return .failure(.notUTF8) }
        let trimmed = WhiteSpace.trimmingSpacesAndNewlines(text)
        guard !trimmed.isEmpty else { return .failure(.empty) }
        return .success(Secret(String(trimmed)))
    }
}

/// Why a password file gives no password now. Names no path (the log line does) and no content.
enum PasswordUnavailable: Error, Equatable, CustomStringConvertible {
    case file(FileUnavailable)
    case notUTF8
    case empty

    var description: String {
        switch self {
        case .file(let unavailable): unavailable.description
        case .notUTF8: "not UTF-8 text"
        case .empty: "the file is empty"
        }
    }
}
