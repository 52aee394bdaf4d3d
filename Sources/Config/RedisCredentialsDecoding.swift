import RedisProtocol
import SafeText

/// `store.username` and `store.passwordFile`: the Redis 6 ACL user and a file holding the
/// password, beside a `store.redis` URL that names neither. The file is read here (as every
/// `…File` secret: trimmed, at most `FileIdentity.credentialSizeLimit`), so `check` finds a
/// missing or empty one; the token thread reads it again at each connection (RedisPasswordFile),
/// so a rotated password needs no reload.
struct RedisCredentialsDecoding {
    let context: DecodingContext

    /// Puts the user and the file's password into `config`'s endpoint, or reports why not at the
    /// key at fault (nil then). `config` is nil when `redis` itself did not decode.
    func decode(_ object: ObjectReader, into config: RedisStoreConfig?) -> RedisStoreConfig? {
        let userField = object.field("username")
        let fileField = object.field("passwordFile")
        guard userField != nil || fileField != nil else { return config }
        var config = config
        if let userField {
            if let user = context.nonEmptyString(userField) {
                if config?.endpoint.user != nil {
                    context.report("the store.redis URL names a user too: set the user in one place only", at: userField)
                    config = nil
                } else {
                    config?.endpoint.user = user
                }
            } else {
                config = nil
            }
        }
        if let fileField {
            if let (password, path) = context.files.secretFile(fileField) {
                if config?.endpoint.password != nil {
                    context.report("the store.redis URL holds a password too: set the password in one place only", at: fileField)
                    config = nil
                } else {
                    config?.endpoint.password = Secret(password)
                    config?.passwordFile = path
                }
            } else {
                config = nil
            }
        } else if let userField, config != nil, config?.endpoint.password == nil {
            context.report("an ACL user needs a password: \"passwordFile\", or the password in the store.redis URL", at: userField)
            config = nil
        }
        return config
    }

    /// `username` and `passwordFile` without `redis`.
    func reportWithoutRedis(_ object: ObjectReader) {
        for field in [object.field("username"), object.field("passwordFile")].compactMap({ $0 }) {
            context.report("only with \"redis\" (the shared store)", at: field)
        }
    }
}
