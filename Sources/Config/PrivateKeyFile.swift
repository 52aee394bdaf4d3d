import Crypto
import FoundationEssentials

extension DecodingContext {
    /// The private key in the PEM file a field names (`clientKeyFile`, `dpop.keyFile`), with the
    /// resolved path, or nil once the problem is reported: no such file, unreadable, not a PEM
    /// private key of a kind the relay uses. Messages name the file and OpenSSL's reason, never
    /// the file's content.
    func privateKey(inFile field: Field) -> (key: PrivateKey, path: String)? {
        guard let path = existingFile(field) else { return nil }
        guard let data = FileManager.default.contents(atPath: path) else {
            report("cannot read file: \(path)", at: field)
            return nil
        }
        do throws(CryptoError) {
            return (try PrivateKey(pem: String(decoding: data, as: UTF8.self)), path)
        } catch {
            report("not a usable PEM private key (\(error)): \(path)", at: field)
            return nil
        }
    }
}
