import ArgumentParser
import Config
import FoundationEssentials
import LocalCA
#if canImport(Glibc)
import Glibc
#endif

/// `oauth-relay ca --config FILE`: the forward proxy's CA (created when missing, issued again
/// when the routes' hosts changed): its path, fingerprint, the hosts it may sign for, and how to
/// make a tool trust it for one process, or a browser profile. Never the key.
struct CACommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ca",
        abstract: "Show the forward proxy's CA (created on first use): path, SHA-256 fingerprint, hosts, and how to trust it.")

    @Option(name: .long, help: "The JSON configuration file.")
    var config: String

    func run() throws {
        let relayConfig = try loadConfig(path: config).config
        let authority: LocalCA
        let change: LocalCA.Change
        do throws(ForwardCA.Failure) {
            (authority, change) = try ForwardCA.authority(config: relayConfig, environment: ProcessInfo.processInfo.environment,
                                                          now: Int64(time(nil)))
        } catch {
            FileHandleOutput.standardError("oauth-relay ca: \(error)\n")
            throw ExitCode(1)
        }
        FileHandleOutput.standardOutput(CATrustText.text(path: authority.certificatePath, fingerprint: authority.fingerprint,
                                                         hosts: authority.hosts.map(\.description), change: change))
    }
}

/// What `oauth-relay ca` prints, from values alone.
enum CATrustText {
    static func text(path: String, fingerprint: String, hosts: [String], change: LocalCA.Change) -> String {
        var lines: [String] = []
        switch change {
        case .loaded:
            break
        case .created:
            lines += ["A new forward proxy CA was created: trust it as below.", ""]
        case .reissued(let previous):
            lines += ["The routes' hosts changed, so a new forward proxy CA was issued: trust it again as below,",
                      "and remove the previous one (SHA256 Fingerprint=\(previous)) from where you trusted it.", ""]
        }
        let quoted = shellQuoted(path)
        lines += [
            "Certificate: \(path)",
            "SHA256 Fingerprint=\(fingerprint)",
            "It may sign only for: \(hosts.joined(separator: " "))",
            "",
            "Trust it for one process:",
            "  curl --cacert \(quoted) https://…",
            "  SSL_CERT_FILE=\(quoted) command          # OpenSSL tools; replaces the system CAs, so for other hosts too:",
            "    cat /etc/ssl/certs/ca-certificates.crt \(quoted) > bundle.pem && SSL_CERT_FILE=$PWD/bundle.pem command",
            "  REQUESTS_CA_BUNDLE=\(quoted) python …     # requests; the same replacement (a bundle as above)",
            "  NODE_EXTRA_CA_CERTS=\(quoted) node …      # added to Node's CAs",
            "  GIT_SSL_CAINFO=\(quoted) git …",
            "  keytool -importcert -keystore relay-truststore.jks -storepass changeit -noprompt -alias oauth-relay-forward -file \(quoted)",
            "    java -Djavax.net.ssl.trustStore=relay-truststore.jks -Djavax.net.ssl.trustStorePassword=changeit …",
            "",
            "Trust it in a browser profile (Chromium's NSS database):",
            "  certutil -d sql:$HOME/.pki/nssdb -A -t \"C,,\" -n oauth-relay-forward -i \(quoted)",
        ]
        return lines.joined(separator: "\n") + "\n"
    }

    /// `text` as one shell word: unchanged when it holds only safe characters, else in single quotes.
    static func shellQuoted(_ text: String) -> String {
        let safe = text.utf8.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || "/._-+:,@%".utf8.contains(byte)
        }
        return safe && !text.isEmpty ? text : "'" + text.replacing("'", with: "'\\''") + "'"
    }
}
