import RedisProtocol
import SafeText

/// `store.username` and `store.passwordFile`: the Redis 6 ACL user and a file holding the
/// password, beside a `store.redis` URL (a server's or a cluster's) that names neither. The file
/// is read here (as every `…File` secret: trimmed, at most `FileIdentity.credentialSizeLimit`), so
/// `check` finds a missing or empty one; the token thread reads it again at each connection
/// (RedisPasswordFile), so a rotated password needs no reload.
struct RedisCredentialsDecoding {
    let context: DecodingContext

    /// Puts the user and the file's password into `config`'s server or seed nodes, or reports why
    /// not at the key at fault (nil then). `config` is nil when `redis` itself did not decode.
    func decode(_ object: ObjectReader, into config: RedisStoreConfig?) -> RedisStoreConfig? {
        let userField = object.field("username")
        let fileField = object.field("passwordFile")
        guard userField != nil || fileField != nil else { return config }
        var user = config?.topology.user
        var password = config?.topology.password
        var passwordFile: String?
        var usable = config != nil
        if let userField {
            if let name = context.nonEmptyString(userField) {
                if user != nil {
                    context.report("the store.redis URL names a user too: set the user in one place only", at: userField)
                    usable = false
                }
                user = name
            } else {
                usable = false
            }
        }
        if let fileField {
            if let (content, path) = context.files.secretFile(fileField) {
                if password != nil {
                    context.report("the store.redis URL holds a password too: set the password in one place only", at: fileField)
                    usable = false
                }
                password = Secret(content)
                passwordFile = path
            } else {
                usable = false
            }
        } else if let userField, usable, password == nil {
            context.report("an ACL user needs a password: \"passwordFile\", or the password in the store.redis URL", at: userField)
            usable = false
        }
        guard usable, var config else { return nil }
        config.topology = config.topology.withCredentials(user: user, password: password)
        config.passwordFile = passwordFile
        return config
    }

    /// `username` and `passwordFile` without `redis`.
    func reportWithoutRedis(_ object: ObjectReader) {
        for field in [object.field("username"), object.field("passwordFile")].compactMap({ $0 }) {
            context.report("only with \"redis\" (the shared store)", at: field)
        }
    }
}
