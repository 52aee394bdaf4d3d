/// How a caller presented its access token: as a bearer token (`Authorization: Bearer`, RFC
/// 6750), or as a DPoP-bound one (`Authorization: DPoP` with a `DPoP` proof, RFC 9449 §7.1)
/// whose proof `DPoPProofCheck` accepted.
public enum TokenPresentation: Sendable, Equatable {
    case bearer
    /// The thumbprint of the accepted proof's key (`DPoPAcceptedProof.keyThumbprint`).
    case dpop(proofKeyThumbprint: String)

    /// Why a token bound to `boundKeyThumbprint` (its `cnf.jkt`, from its claims or its
    /// introspection; nil when it is bound to no key) may not be used as presented; nil when it
    /// may. A bound token needs a proof of its key (§7.1; without one, §7.2's downgrade to
    /// Bearer would let a stolen token be used), and a proof is of a key the token is bound to.
    public func mismatch(withTokenBoundTo boundKeyThumbprint: String?) -> TokenBindingMismatch? {
        switch (self, boundKeyThumbprint) {
        case (.bearer, nil): nil
        case (.bearer, _?): .boundTokenAsBearer
        case (.dpop, nil): .unboundToken
        case (.dpop(let proofKey), let bound?): proofKey == bound ? nil : .anotherKey
        }
    }
}

/// Why a token's binding does not fit how it was presented.
public enum TokenBindingMismatch: Sendable, Equatable, CustomStringConvertible {
    /// A DPoP-bound token came as a bearer token, without a proof.
    case boundTokenAsBearer
    /// The proof is of another key than the one the token is bound to.
    case anotherKey
    /// A proof came with a token bound to no key.
    case unboundToken

    public var description: String {
        switch self {
        case .boundTokenAsBearer: "the token is DPoP-bound but came without a DPoP proof"
        case .anotherKey: "the DPoP proof's key is not the key the token is bound to"
        case .unboundToken: "the token came with a DPoP proof but is bound to no key"
        }
    }
}
