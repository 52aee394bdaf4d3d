/// The schemes the relay connects with.
public enum URLScheme: String, Sendable, Equatable, Hashable {
    case http
    case https

    public var defaultPort: UInt16 {
        switch self {
        case .http: 80
        case .https: 443
        }
    }
}
