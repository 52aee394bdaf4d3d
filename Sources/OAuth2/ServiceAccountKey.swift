import Crypto
import Endpoints
import JOSE
import JSON

/// A Google service-account key: the JSON file the Cloud console or `gcloud iam service-accounts
/// keys create` writes (`"type": "service_account"`, `client_email`, `private_key` as PKCS#8 PEM,
/// `private_key_id`, `token_uri`, and members the relay does not use: `project_id`, `client_id`,
/// `auth_uri`, ...). What it keeps: who the account is, the RSA key it signs with (RS256, with
/// `private_key_id` as the `kid` Google knows the key by) and its token endpoint.
///
/// Read from the file's content alone (`parse(json:)`: no path, no clock), so the same function
/// reads a key at load and again after its file was rotated.
///
/// Two keys are equal when their account, key id, public key and token endpoint are. The
/// description names the account and the key id, never the key.
public struct ServiceAccountKey: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// `client_email`: the JWTs' `iss` (and a self-signed token's `sub`).
    public let clientEmail: String
    /// The RS256 key of `private_key`, with `private_key_id` as its `kid` (none when the file has none).
    public let signingKey: ClientAssertionKey
    /// `token_uri`: https, or http to a loopback host (a local stand-in in tests).
    public let tokenURI: HTTPURL

    public init(clientEmail: String, signingKey: ClientAssertionKey, tokenURI: HTTPURL) {
        self.clientEmail = clientEmail
        self.signingKey = signingKey
        self.tokenURI = tokenURI
    }

    /// `private_key_id`, the header's `kid`.
    public var keyID: String? { signingKey.keyID }

    /// Reads a key file's content. Refused: text that is not a JSON object, a `type` other than
    /// `service_account`, a missing or empty `client_email`, a `private_key` that is not an RSA
    /// private key of at least 2048 bits, a `private_key_id` that is not a non-empty string, and
    /// a `token_uri` that is not https (http only to a loopback host, as for a `tokenUrl` without
    /// `allowInsecureTokenUrl`: a key file has no such option). No error quotes the file's values,
    /// except `type`'s.
    public static func parse(json: String) throws(ServiceAccountKeyError) -> ServiceAccountKey {
        let value: JSONValue
        do throws(JSONSyntaxError) {
            value = try JSONValue(parsing: Array(json.utf8))
        } catch {
            // A syntax error's message may show a character of the text: only its offset is kept.
            throw .notJSON(offset: error.offset)
        }
        guard let members = value.dictionary else { throw .notAnObject }
        func string(_ name: String, required: Bool) throws(ServiceAccountKeyError) -> String? {
            guard let value = members[name] else {
                if required { throw .missing(name) }
                return nil
            }
            guard let text = value.string else { throw .notAString(name) }
            guard !text.isEmpty else { throw .empty(name) }
            return text
        }
        let type = try string("type", required: true)!
        guard type == "service_account" else { throw .notAServiceAccount(type: type) }
        let clientEmail = try string("client_email", required: true)!
        let keyID = try string("private_key_id", required: false)
        let pem = try string("private_key", required: true)!
        let tokenURI = try Self.tokenURI(string("token_uri", required: true)!)
        let privateKey: PrivateKey
        do throws(CryptoError) {
            privateKey = try PrivateKey(pem: pem)
        } catch {
            throw .unusablePrivateKey(reason: error.description)
        }
        guard case .rsa = privateKey.kind else { throw .unusablePrivateKey(reason: "it is an \(privateKey.kind) key, not RSA (RS256)") }
        do throws(JOSEError) {
            let signingKey = try ClientAssertionKey(privateKey: privateKey, algorithm: .rs256, keyID: keyID)
            return ServiceAccountKey(clientEmail: clientEmail, signingKey: signingKey, tokenURI: tokenURI)
        } catch {
            throw .unusablePrivateKey(reason: error.description)
        }
    }

    /// `token_uri` as a URL the relay may send a signed assertion to.
    private static func tokenURI(_ text: String) throws(ServiceAccountKeyError) -> HTTPURL {
        guard let url = try? HTTPURL(absolute: text, allowsQuery: true) else { throw .tokenURINotHTTP }
        guard url.scheme == .https || HostSyntax.isLoopback(url.host) else { throw .tokenURIInsecure(url: redactedURL(url)) }
        return url
    }

    public var description: String {
        "service account \(clientEmail) (\(signingKey))"
    }

    public var debugDescription: String { description }

    public var customMirror: Mirror {
        Mirror(self, children: ["key": description], displayStyle: .struct)
    }
}

/// Why a service-account key file's content cannot be used. Each names the member, never its
/// value (but `type`'s, which is no secret and says what the file is instead).
public enum ServiceAccountKeyError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A JSON syntax error at this byte.
    case notJSON(offset: Int)
    case notAnObject
    case missing(String)
    case notAString(String)
    case empty(String)
    case notAServiceAccount(type: String)
    /// `private_key` is no PEM private key, or not an RSA key of at least 2048 bits.
    case unusablePrivateKey(reason: String)
    case tokenURINotHTTP
    /// `token_uri` is plain http to a host that is not loopback.
    case tokenURIInsecure(url: String)

    public var description: String {
        switch self {
        case .notJSON(let offset):
            "not a JSON service account key (a JSON syntax error at byte \(offset))"
        case .notAnObject:
            "not a JSON service account key (not a JSON object)"
        case .missing(let member):
            "the service account key has no \(member)"
        case .notAString(let member):
            "the service account key's \(member) is not a string"
        case .empty(let member):
            "the service account key's \(member) is empty"
        case .notAServiceAccount(let type):
            "not a service account key: its type is \"\(Self.shown(type))\", not \"service_account\""
        case .unusablePrivateKey(let reason):
            "the service account key's private_key is not a usable RSA private key (\(reason))"
        case .tokenURINotHTTP:
            "the service account key's token_uri is not an absolute http:// or https:// URL"
        case .tokenURIInsecure(let url):
            "the service account key's token_uri \(url) is plain http:// to a host that is not loopback, so its signed "
                + "assertions and tokens would cross the network unencrypted"
        }
    }

    /// `type` as shown: printable ASCII, at most 40 characters (it says what the file is, such as
    /// `authorized_user` or `external_account`, but it is still the file's text).
    private static func shown(_ type: String) -> String {
        let printable = type.unicodeScalars.map { $0.isASCII && $0.value >= 0x20 && $0.value < 0x7F && $0 != "\"" ? Character($0) : "?" }
        return String(printable.prefix(40)) + (printable.count > 40 ? "…" : "")
    }
}
