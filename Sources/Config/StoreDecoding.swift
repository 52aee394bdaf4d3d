import Foundation
import OAuth2

/// `store`: where the relay keeps its tokens across restarts (the TokenStore module), and the
/// key that encrypts them. Restart-only.
public struct StoreConfig: Sendable, Equatable {
    /// The directory, resolved against the config file's directory.
    public var path: String
    /// The 32-byte key as base64 text (checked to decode to 32 bytes), from `key` or `keyFile`.
    public var key: Secret

    public init(path: String, key: Secret) {
        self.path = path
        self.key = key
    }

    static let knownKeys = ["path", "key", "keyFile"]
}

extension DecodingContext {
    func decodeStore(_ field: Field) -> StoreConfig? {
        guard let object = ObjectReader(field, knownKeys: StoreConfig.knownKeys, in: self) else { return nil }
        let path = object.required("path").flatMap(nonEmptyString).map(resolvePath)
        let keyField = object.field("key") ?? object.field("keyFile")
        if keyField == nil {
            report("required: \"key\" or \"keyFile\" (32 random bytes, base64: `openssl rand -base64 32`)",
                   at: object.path.key("key"), offset: object.lastOffset)
        }
        let key = object.secret("key")
        if let key, let keyField {
            // Words about the key's length only: never its text.
            let bytes = Data(base64Encoded: key.value)
            if bytes == nil {
                report("the key is not base64 (create one with `openssl rand -base64 32`)", at: keyField)
            } else if let bytes, bytes.count != 32 {
                report("the key decodes to \(bytes.count) bytes, not 32 (create one with `openssl rand -base64 32`)", at: keyField)
            }
        }
        guard let path, let key else { return nil }
        return StoreConfig(path: path, key: key)
    }
}
