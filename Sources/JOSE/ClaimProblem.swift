/// A JWT claim that fails validation.
public enum ClaimProblem: Equatable, Sendable, CustomStringConvertible {
    case missing(String)
    case expired
    case notYetValid
    case issuedInTheFuture
    case issuerMismatch(expected: String)
    case audienceMismatch(expected: String)
    case nonceMismatch

    public var description: String {
        switch self {
        case .missing(let claim): "the \(claim) claim is missing"
        case .expired: "it has expired (exp)"
        case .notYetValid: "it is not valid yet (nbf)"
        case .issuedInTheFuture: "it was issued in the future (iat)"
        case .issuerMismatch(let expected): "the issuer is not \"\(expected)\""
        case .audienceMismatch(let expected): "the audience does not include \"\(expected)\""
        case .nonceMismatch: "the nonce does not match the one sent"
        }
    }
}
