import Crypto
import FoundationEssentials
import HTTPFields
import WatchedFiles

/// The files a config names (`…File` secrets, certificates, CA bundles, private keys, the
/// store's directory): paths resolved against the config file's directory, checked to be
/// readable files, and read. Problems are reported at the field that names the file; they name
/// the file, never its content.
struct ReferencedFiles {
    let context: DecodingContext

    /// A path from the config, resolved against the config file's directory.
    func resolvePath(_ path: String) -> String {
        let baseDirectory = context.baseDirectory
        guard !path.hasPrefix("/") else { return path }
        return baseDirectory.hasSuffix("/") ? baseDirectory + path : baseDirectory + "/" + path
    }

    /// A file path that must name a readable regular file; returns the resolved path.
    func existingFile(_ field: Field) -> String? {
        guard let path = context.nonEmptyString(field) else { return nil }
        let resolved = resolvePath(path)
        if let problem = Self.unreadableFileProblem(resolved) {
            context.report("\(problem): \(resolved)", at: field)
            return nil
        }
        return resolved
    }

    /// `existingFile` for a file the relay loads into something long-lived (a certificate, a key,
    /// a CA bundle): recorded in `DecodingContext.watchedFiles`, so that a rotation of the file
    /// re-applies the configuration.
    func watchedFile(_ field: Field) -> String? {
        guard let path = existingFile(field) else { return nil }
        context.watch(field, path: path)
        return path
    }

    /// The largest file the configuration reads (no key, certificate bundle or secret is near it).
    static let fileSizeLimit = FileIdentity.credentialSizeLimit

    /// The bytes of the file at `path` (resolved), read once, at most `fileSizeLimit`; nil once the
    /// problem is reported at `field`, naming the file: something that is not a regular file (a
    /// FIFO or a device would block the main loop that re-applies the configuration), too large,
    /// gone, unreadable.
    func contents(of path: String, at field: Field) -> [UInt8]? {
        switch Self.contents(of: path) {
        case .success(let bytes): return bytes
        case .failure(let unavailable):
            context.report("cannot read file (\(unavailable)): \(path)", at: field)
            return nil
        }
    }

    /// The bytes of the file at `path`, or why not (`contents(of:at:)` without a report).
    static func contents(of path: String) -> Result<[UInt8], FileUnavailable> {
        FileIdentity.current(of: path).flatMap { $0.contents(limit: fileSizeLimit) }
    }

    /// The contents of a secret file, trimmed of surrounding whitespace.
    func secretFileContent(_ field: Field) -> String? {
        secretFile(field)?.content
    }

    /// The contents of a secret file, trimmed of surrounding whitespace, and its resolved path.
    func secretFile(_ field: Field) -> (content: String, path: String)? {
        guard let path = existingFile(field), let data = contents(of: path, at: field) else { return nil }
        guard let text = String(validating: data, as: UTF8.self) else {
            context.report("file is not UTF-8 text: \(path)", at: field)
            return nil
        }
        let trimmed = String(WhiteSpace.trimmingSpacesAndNewlines(text))
        guard !trimmed.isEmpty else {
            context.report("file is empty: \(path)", at: field)
            return nil
        }
        return (trimmed, path)
    }

    /// The private key in the PEM file a field names (`dpop.keyFile`), with the resolved path, or
    /// nil once the problem is reported: no such file, unreadable, not a PEM private key of a
    /// kind the relay uses. Messages name the file and OpenSSL's reason.
    func privateKey(inFile field: Field) -> (key: PrivateKey, path: String)? {
        guard let (pem, path) = pemText(inFile: field) else { return nil }
        do throws(CryptoError) {
            return (try PrivateKey(pem: pem), path)
        } catch {
            context.report(Self.unusablePrivateKey(error, path: path), at: field)
            return nil
        }
    }

    /// The text of the PEM file a field names (a key, a certificate), as it is (for a parser of
    /// key or certificate text), with the resolved path; nil once the problem is reported (no
    /// such file, unreadable).
    func pemText(inFile field: Field) -> (text: String, path: String)? {
        guard let path = existingFile(field), let data = contents(of: path, at: field) else { return nil }
        return (String(decoding: data, as: UTF8.self), path)
    }

    /// The message for a PEM file that holds no usable private key: the file and OpenSSL's reason.
    static func unusablePrivateKey(_ error: CryptoError, path: String) -> String {
        "not a usable PEM private key (\(error)): \(path)"
    }

    /// The `x5t#S256` of the first certificate in the PEM file `path`; nil when it cannot be read
    /// or holds no PEM certificate (building its TLS configuration reports that, naming the file).
    func certificateThumbprint(_ path: String) -> String? {
        (try? Self.contents(of: path).get()).flatMap { CertificateThumbprint.sha256(pem: String(decoding: $0, as: UTF8.self)) }
    }

    private static func unreadableFileProblem(_ path: String) -> String? {
        var isDirectory = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { return "no such file" }
        if isDirectory { return "is a directory, not a file" }
        if !FileManager.default.isReadableFile(atPath: path) { return "file is not readable" }
        return nil
    }
}
