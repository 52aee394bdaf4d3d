import HTTPFields
import OAuth2

extension GrantType {
    static let names = ["client_credentials", "password", "refresh_token", "authorization_code", "device_code",
                        "github_app_installation"]

    /// The grant named by `grant`: one of `names`, or an absolute URI (an extension grant).
    static func parse(_ text: String) throws(InvalidValue) -> GrantType {
        switch text {
        case "client_credentials": return .clientCredentials
        case "password": return .password
        case "refresh_token": return .refreshToken
        case "authorization_code": return .authorizationCode
        case "device_code", "urn:ietf:params:oauth:grant-type:device_code": return .deviceCode
        case "github_app_installation": return .gitHubAppInstallation
        default:
            guard isAbsoluteURI(text) else {
                throw InvalidValue("unknown grant \"\(text)\"" + didYouMean(text, among: names)
                                   + "; expected one of \(names.joined(separator: ", ")) or an absolute URI")
            }
            return .extension(text)
        }
    }
}

/// True for `scheme:rest` with an RFC 3986 scheme, a non-empty rest and no spaces or control
/// characters: `urn:ietf:params:oauth:grant-type:jwt-bearer`, `https://api.example.com/`.
func isAbsoluteURI(_ text: String) -> Bool {
    guard let colon = text.firstIndex(of: ":"), colon != text.startIndex, text.index(after: colon) != text.endIndex else {
        return false
    }
    let scheme = text[..<colon].utf8
    return ASCII.isAlpha(scheme.first!)
        && scheme.allSatisfy { ASCII.isAlphanumeric($0) || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".") }
        && text.utf8.allSatisfy { $0 > 0x20 && $0 != 0x7F }
}
