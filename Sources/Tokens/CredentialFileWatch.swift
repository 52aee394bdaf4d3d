// CredentialFileWatch: one identity's credential files (Identity.credentialFiles), read again on
// the token loop when they change, so a rotated Kubernetes Secret or projected service-account
// token is used without a reload.
//
//  1. Before every request to the identity's IdP (IdPClient.send), each file is looked at: one
//     `stat` and one `realpath` (FileIdentity). An unchanged file costs nothing more; nothing
//     happens on the proxy's data path.
//  2. A changed file is read and its content put in the identity's place
//     (`Identity.withCredential`); the request is made again with it (`TokenRequest.rebuilt`).
//  3. A file that vanished, cannot be read, is empty or does not parse leaves the last good
//     content in use (the one loaded at start, or the last one read): one warning when the
//     outage starts, one info line when the file is good again, none in between.
//  4. A private key and its certificate (`clientKeyFile`, `clientCertFile`) are a pair: when
//     one file's new content does not fit the other's current one, both files are read and
//     taken together (a Secret swapping `tls.key` and `tls.crt` at once), or neither.
//
// The watch lives as long as the identity's slot: a reload that keeps the identity keeps it,
// and with it the credentials read since the load.

import OAuth2
import WatchedFiles

/// Runs on the token loop only.
final class CredentialFileWatch {
    /// The identity as loaded: the lifecycle builds its requests with it.
    let loaded: Identity
    /// The identity with the last good content of each file.
    private(set) var current: Identity
    private var files: [WatchedCredentialFile]

    /// A credential file larger than this is refused, as at load (no credential is anywhere near it).
    static let sizeLimit = FileIdentity.credentialSizeLimit

    init(identity: Identity) {
        loaded = identity
        current = identity
        files = identity.credentialFiles.map { WatchedCredentialFile(file: $0) }
    }

    /// Looks at every file and reads again those that changed (1 and 2 above); what to log.
    func refresh() -> [CredentialFileNews] {
        var news: [CredentialFileNews] = []
        for index in files.indices {
            let file = files[index].file
            let found: FileIdentity
            switch FileIdentity.current(of: file.path) {
            case .failure(let unavailable):
                // Looked at again on every request until it is back; then it is read.
                files[index].seen = nil
                news += files[index].unusable(because: unavailable.description)
                continue
            case .success(let identity):
                guard identity != files[index].seen else { continue }
                found = identity
            }
            files[index].seen = found
            switch take(file, from: found) {
            case .unreadable(let reason):
                // A failed read (not its content) is tried again at the next look.
                files[index].seen = nil
                news += files[index].unusable(because: reason)
            case .unusable(let reason):
                news += files[index].unusable(because: reason)
            case .taken(let identity, let partner):
                news += files[index].usable()
                if let partner {
                    files[partner.index].seen = partner.found
                    news += files[partner.index].usable()
                }
                if identity != current {
                    current = identity
                    news.append(.changed(file))
                }
            }
        }
        return news
    }

    /// `request` as it goes with the current credentials: itself while they are the ones loaded.
    /// An `auto` identity's requests are always themselves: they are built from the identity it
    /// learnt (its registered client), which the configured one here (no client) must not replace;
    /// its file, the initial access token, goes with a registration only.
    func request(_ request: TokenRequest) -> TokenRequest {
        current == loaded || loaded.auto != nil ? request : request.rebuilt(for: current)
    }

    /// What reading a changed file gave.
    private enum Reading {
        /// The current identity with the file's content (and, for one of a key and certificate
        /// pair, the other file's, read as `found`).
        case taken(Identity, partner: (index: Int, found: FileIdentity)?)
        /// Why the content cannot be used: looked at again only when the file changes.
        case unusable(String)
        /// Why the file (or its partner) could not be read: tried again at the next look.
        case unreadable(String)
    }

    /// The current identity with the content of `file` as `found`, or why it cannot be.
    private func take(_ file: CredentialFile, from found: FileIdentity) -> Reading {
        let text: String
        switch Self.text(of: found) {
        case .failure(let reason): return .unreadable(reason.description)
        case .success(let read): text = read
        }
        do throws(CredentialFileProblem) {
            return .taken(try current.withCredential(file.role, content: text), partner: nil)
        } catch .certificateKeyMismatch {
            return takeWithPartner(file, text: text)
        } catch {
            return .unusable(error.description)
        }
    }

    /// A private key or certificate that does not fit the other's current content, taken with the
    /// other file as it is now (4 above); unusable when the two do not make a pair either, and
    /// unreadable when the other file cannot be read now (both are then tried again).
    private func takeWithPartner(_ file: CredentialFile, text: String) -> Reading {
        let mismatch = Reading.unusable(CredentialFileProblem.certificateKeyMismatch.description)
        let partnerRole: CredentialRole = file.role == .clientKey ? .clientCertificate : .clientKey
        guard file.role == .clientKey || file.role == .clientCertificate,
              let partner = files.firstIndex(where: { $0.file.role == partnerRole }) else { return mismatch }
        let partnerText: String, partnerFound: FileIdentity
        switch FileIdentity.current(of: files[partner].file.path) {
        case .failure(let unavailable): return .unreadable("\(files[partner].file.key): \(unavailable)")
        case .success(let found): partnerFound = found
        }
        switch Self.text(of: partnerFound) {
        case .failure(let reason): return .unreadable("\(files[partner].file.key): \(reason.description)")
        case .success(let read): partnerText = read
        }
        let (keyPEM, certificatePEM) = file.role == .clientKey ? (text, partnerText) : (partnerText, text)
        guard let identity = try? current.withClientKey(pem: keyPEM, certificatePEM: certificatePEM) else { return mismatch }
        return .taken(identity, partner: (partner, partnerFound))
    }

    /// The UTF-8 text of the file as `found`, or why it cannot be had.
    private static func text(of found: FileIdentity) -> Result<String, TextUnavailable> {
        switch found.contents(limit: sizeLimit) {
        case .failure(let unavailable): return .failure(TextUnavailable(description: unavailable.description))
        case .success(let bytes):
            guard let text = String(validating: bytes, as: UTF8.self) else { return .failure(TextUnavailable(description: "not UTF-8 text")) }
            return .success(text)
        }
    }

    /// Why a file's text cannot be had (its reason as the log names it).
    private struct TextUnavailable: Error {
        let description: String
    }
}

/// One watched file: the version last read and, while it is unusable, why.
struct WatchedCredentialFile {
    let file: CredentialFile
    /// The version last read (nil before the first look, and while the file is missing).
    var seen: FileIdentity?
    /// Why the file is unusable, from the first failed look until a good read.
    private(set) var outage: String?

    init(file: CredentialFile) {
        self.file = file
    }

    /// The file cannot be used: news at the start of an outage only.
    mutating func unusable(because reason: String) -> [CredentialFileNews] {
        defer { outage = reason }
        return outage == nil ? [.unusable(file, reason: reason)] : []
    }

    /// The file was read and taken: news when that ends an outage.
    mutating func usable() -> [CredentialFileNews] {
        defer { outage = nil }
        return outage == nil ? [] : [.usableAgain(file)]
    }
}

/// What a look at an identity's credential files found that the log shows. Names the file and
/// its key, never its content.
enum CredentialFileNews: Equatable {
    /// A new content was taken.
    case changed(CredentialFile)
    /// The file cannot be used; the last good content stays in use.
    case unusable(CredentialFile, reason: String)
    /// The file is good again after an outage.
    case usableAgain(CredentialFile)
}
