// A route's DPoP-bound callers (RFC 9449 §4.3, §7.1): each request's proof is checked on its own,
// never cached (it names the request: method, URI, the token's hash). The key the proof is of is
// compared with the token's `cnf.jkt` once the token is known (`InboundGate.judged`), and only a
// request the route admits has its proof's `jti` remembered, for its window, by the route's
// ProofReplayMemory, shared by every worker, so a second use of a proof is refused wherever it
// arrives. Remembering nothing before the token is admitted keeps the memory from being filled
// by proofs of keys no token names (anyone can make those).
//
//   proof ─verifyProof─▶ verified ─(token admitted, cnf.jkt = proof key)─▶ recordingProof ─▶ fresh: admitted
//                                                                                        └▶ seen: replayed / full: 503

import JOSE

extension InboundGate {
    /// What came of a request's proof.
    enum ProofAnswer: Equatable {
        /// Good for this request; its `jti` is remembered once the token is admitted (`recordingProof`).
        case verified(DPoPAcceptedProof)
        case refused(InboundRefusal)
    }

    /// Checks `proof` for `request` at `now` (Unix seconds); remembers nothing.
    func verifyProof(_ proof: UnsafeRawBufferPointer, for request: DPoPProofRequest, now: Int64) -> ProofAnswer {
        switch DPoPProofCheck.verify(String(decoding: proof, as: UTF8.self), for: request, rules: proofRules, now: now) {
        case .refused(.replayed): .refused(.replayedProof)
        case .refused(let refusal): .refused(.invalidProof(refusal.description))
        case .accepted(let accepted): .verified(accepted)
        }
    }

    /// `outcome` of a request that came with `proof` (nil: as Bearer): an admitted caller's proof
    /// is remembered now, and refused if it was seen before (or if the memory is full); any other
    /// outcome is left as it is and remembers nothing.
    func recordingProof(_ proof: DPoPAcceptedProof?, of outcome: Outcome, now: Int64) -> Outcome {
        guard let proof, case .admitted = outcome else { return outcome }
        switch proofs.withLock({ $0.admit(proof, now: now) }) {
        case .fresh: return outcome
        case .replayed: return .refused(.replayedProof)
        case .full: return .refused(.proofMemoryFull(retryAfterSeconds: max(1, Int(proofRules.windowSeconds))))
        }
    }
}
