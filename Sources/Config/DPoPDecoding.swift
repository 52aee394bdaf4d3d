import Crypto
import JOSE
import OAuth2

/// Reading an identity's `dpop`: `true` (a generated ES256 key), `false`, or `{ "keyFile": PEM,
/// "alg": … }` where either key may be left out (no `keyFile`: a generated key for `alg`; no
/// `alg`: the key's default). The key file is read and checked here, so a key that cannot sign
/// fails the config, not a token request; no message shows key material.
struct DPoPDecoding {
    let context: DecodingContext

    static let dpopKeys = ["keyFile", "alg"]

    func decodeDPoP(_ field: Field) -> DPoPBinding? {
        switch field.value.kind {
        case .bool(let enabled):
            return enabled ? .generatedKey(.es256) : nil
        case .object:
            break
        default:
            context.typeMismatch(field, expected: "true, false or an object with keyFile and/or alg")
            return nil
        }
        guard let object = ObjectReader(field, knownKeys: Self.dpopKeys, in: context) else { return nil }
        let algorithm = object.parsed("alg") { text throws(InvalidValue) in
            guard let algorithm = JWSAlgorithm(rawValue: text), DPoPKey.algorithms.contains(algorithm) else {
                throw InvalidValue("expected one of \(DPoPKey.algorithms.map(\.rawValue).joined(separator: ", ")), got \"\(text)\"")
            }
            return algorithm
        }
        guard let keyField = object.field("keyFile") else {
            if object.field("alg") != nil && algorithm == nil { return nil }
            let generated = algorithm ?? .es256
            guard generated == .es256 || generated == .edDSA else {
                context.report("\(generated.rawValue) needs an RSA keyFile: without one the relay generates an ES256 (P-256) "
                               + "or EdDSA (Ed25519) key", at: object.field("alg") ?? field)
                return nil
            }
            return .generatedKey(generated)
        }
        // A new key in the file is a changed identity: tokens bound to the new key's thumbprint.
        // Watched (its identity recorded) before it is read.
        guard context.files.watchedFile(keyField) != nil, let (privateKey, path) = context.files.privateKey(inFile: keyField) else { return nil }
        if object.field("alg") != nil && algorithm == nil { return nil }
        do throws(JOSEError) {
            return .key(try DPoPKey(privateKey: privateKey, algorithm: algorithm))
        } catch {
            context.report("alg \(algorithm?.rawValue ?? "") does not fit the \(privateKey.kind) key in \(path)",
                           at: object.field("alg") ?? keyField)
            return nil
        }
    }
}
