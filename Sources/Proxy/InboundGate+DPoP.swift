// A route's DPoP-bound callers (RFC 9449 §4.3, §7.1): each request's proof is checked on its own,
// never cached (it names the request: method, URI, the token's hash), and its `jti` is
// remembered for its window by the route's ProofReplayMemory, shared by every worker, so a
// second use of a proof is refused wherever it arrives. The key the proof is of is compared with
// the token's `cnf.jkt` once the token is known (`InboundGate.judged`).

import JOSE

extension InboundGate {
    /// What came of a request's proof.
    enum ProofAnswer: Equatable {
        /// Good and not seen before: the RFC 7638 thumbprint of its key.
        case accepted(keyThumbprint: String)
        case refused(InboundRefusal)
    }

    /// Checks `proof` for `request` at `now` (Unix seconds) and remembers its `jti`.
    func acceptProof(_ proof: UnsafeRawBufferPointer, for request: DPoPProofRequest, now: Int64) -> ProofAnswer {
        switch DPoPProofCheck.verify(String(decoding: proof, as: UTF8.self), for: request, rules: proofRules, now: now) {
        case .refused(.replayed):
            return .refused(.replayedProof)
        case .refused(let refusal):
            return .refused(.invalidProof(refusal.description))
        case .accepted(let accepted):
            switch proofs.withLock({ $0.admit(accepted, now: now) }) {
            case .fresh: return .accepted(keyThumbprint: accepted.keyThumbprint)
            case .replayed: return .refused(.replayedProof)
            case .full: return .refused(.proofMemoryFull(retryAfterSeconds: max(1, Int(proofRules.windowSeconds))))
            }
        }
    }
}
