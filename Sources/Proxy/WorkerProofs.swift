// WorkerProofs: one worker's side of DPoP (RFC 9449) for forwarded requests.
//
// A `DPoP` token goes upstream as `Authorization: DPoP <token>` with a `DPoP` proof made for that
// request alone (its method, the target URI the upstream sees, a fresh `jti`, `iat`, the token's
// `ath`, and the upstream's latest nonce). Proofs are signed on the worker, so each worker keeps
// its own `DPoPProofWriter` per identity (its signing state is one thread's). The upstream's nonce
// is the identity's, shared by the workers (`SharedDPoPNonce`, one per identity and upstream
// origin): a nonce one worker hears is in every worker's next proof, read through this worker's
// copy with one atomic load and no lock while it stays the same. A nonce no worker has heard yet
// costs one `use_dpop_nonce` answer, replayed at once (Exchange+Response.swift). Each proof's
// nonce version goes with its request (`ExchangeWorkspace.dpopNonceVersion`), and a nonce in the
// answer is learnt only over that version: an answer made before a rotation another worker heard
// already does not put the old nonce back. The replay after a `use_dpop_nonce` answer signs with
// the nonce that answer asked for, whatever the shared slot holds by then.

import Crypto
import JOSE
import OAuth2
import Tokens

/// What a request with a `DPoP` token needs for its proof: this worker's writer for the
/// identity's key and the token's `ath` (the base64url SHA-256 of the token, computed once per
/// token and worker).
struct DPoPProofing {
    let writer: DPoPProofWriter
    let accessTokenHash: [UInt8]
}

final class WorkerProofs {
    /// By identity slot. A dictionary, not an array indexed by slot: slots are never reused, so an
    /// array would grow with every reload that replaces an identity. Looked up once per token and
    /// worker (the cached token keeps its proofing), so off the per-request path.
    private var writers: [Int: DPoPProofWriter] = [:]
    /// This worker's copy of each DPoP route's shared upstream nonce, by route position, and the
    /// plan each was read for (a plan of other settings at the same position reads its own slot).
    private var nonceCopies: [DPoPNonceCopy] = []
    private var nonceCopyPlans: [RoutePlan?] = []
    private var random = BufferedSecureRandom()

    /// The proofing of `token`, a `DPoP` token of `tokens`; a problem when the identity's key
    /// cannot sign here (it could not be generated, or OpenSSL could not prepare it).
    func proofing(for token: AccessToken, of tokens: IdentityTokens) -> Result<DPoPProofing, TokenUnavailable> {
        let slot = tokens.slot
        if let writer = writers[slot] {
            return .success(DPoPProofing(writer: writer, accessTokenHash: Self.accessTokenHash(token)))
        }
        let writer: DPoPProofWriter
        do {
            guard let key = try tokens.dpop?.get() else { throw DPoPKeyError.noKey }
            writer = try DPoPProofWriter(builder: key.builder)
        } catch {
            return .failure(TokenUnavailable(identity: tokens.identity.name, reason: .refused,
                                             detail: "no DPoP proof can be signed for identity \(tokens.identity.name): \(error)"))
        }
        writers[slot] = writer
        return .success(DPoPProofing(writer: writer, accessTokenHash: Self.accessTokenHash(token)))
    }

    private static func accessTokenHash(_ token: AccessToken) -> [UInt8] {
        Array(DPoPProofBuilder.accessTokenHash(token.value).utf8)
    }

    /// Signs a proof for a request to `plan`'s upstream and calls `body` with it (valid only during
    /// the call). `target`: the request-target as the upstream receives it. The proof carries the
    /// nonce in force, or `challengedNonce` when given: the replay after a `use_dpop_nonce` answer
    /// signs with the nonce that answer asked for, whatever the shared nonce holds by then (it may
    /// have moved to one this upstream, or this backend of it, does not take; one replay signed
    /// with it would get the challenge again, relayed to the client). `nonceVersion` is set to the
    /// version of the nonce in force as the proof is made, for `remember(_:for:provedAt:)` with
    /// its answer (made after the proof, so no older than that nonce).
    func withProof<Result>(_ proofing: DPoPProofing, method: UnsafeRawBufferPointer, plan: RoutePlan,
                           target: UnsafeRawBufferPointer, challengedNonce: [UInt8]? = nil, nonceVersion: inout UInt64,
                           _ body: (UnsafeRawBufferPointer) -> Result) throws(JOSEError) -> Result {
        let inForce = inForce(for: plan)
        nonceVersion = inForce?.version ?? 0
        let nonce = challengedNonce ?? inForce?.nonce
        let made = plan.dpopTargetOrigin.withUnsafeBytes { origin -> Swift.Result<Result, JOSEError> in
            do throws(JOSEError) {
                return .success(try proofing.writer.withProof(method: method, origin: origin, target: target,
                                                              accessTokenHash: proofing.accessTokenHash, nonce: nonce,
                                                              now: IssuedAt.now(), random: &random, body))
            } catch {
                return .failure(error)
            }
        }
        return try made.get()
    }

    /// The nonce in force for `plan`'s upstream origin and identity, whichever worker heard it.
    func nonce(for plan: RoutePlan) -> [UInt8]? {
        inForce(for: plan)?.nonce
    }

    /// The nonce in force for `plan`'s upstream origin and identity and its version, through this
    /// worker's copy (one atomic load); nil for a plan without a shared nonce.
    private func inForce(for plan: RoutePlan) -> SharedDPoPNonce.Learnt? {
        guard let shared = plan.upstreamNonce else { return nil }
        let position = plan.position
        if position >= nonceCopies.count {
            nonceCopies.append(contentsOf: repeatElement(DPoPNonceCopy(), count: position + 1 - nonceCopies.count))
            nonceCopyPlans.append(contentsOf: repeatElement(nil, count: position + 1 - nonceCopyPlans.count))
        }
        if nonceCopyPlans[position] !== plan {
            nonceCopies[position] = DPoPNonceCopy()
            nonceCopyPlans[position] = plan
        }
        return nonceCopies[position].read(shared)
    }

    /// `plan`'s upstream sent `nonce` (already checked by `DPoPChallenge.nonce`) in answer to a
    /// proof that carried the nonce of `version`: every worker's next proof to that origin carries
    /// it, unless the nonce in force moved past `version` since that proof (the answer may predate
    /// a rotation another worker heard; a newer nonce it brings is asked for again by the next
    /// proof's `use_dpop_nonce` answer). The nonce in force already (most answers repeat it) and a
    /// stale answer are seen in this worker's copy, without the shared slot's lock.
    /// A `use_dpop_nonce` answer follows the same rule, although it names the nonce the upstream
    /// wants as it answers: whether it came before or after the answer that moved the slot is
    /// unknown (an upstream rotating n-1, n-2, n-3 and one answering late with n-2 look alike), and
    /// two backends with nonces of their own would move it back and forth for every worker. Its own
    /// request does not pay for that: its replay signs with the nonce it asked for (`withProof`'s
    /// `challengedNonce`), and a nonce the replay's answer brings is learnt over the slot's version.
    func remember(_ nonce: UnsafeRawBufferPointer, for plan: RoutePlan, provedAt version: UInt64) {
        guard let inForce = inForce(for: plan), inForce.version == version else { return }
        if let known = inForce.nonce, known.elementsEqual(nonce) { return }
        plan.upstreamNonce?.learn(nonce, ifVersion: version)
    }

    /// How many identities this worker keeps a proof writer for.
    var writerCount: Int { writers.count }

    /// A reload: writers of identities no longer in force go, and every copy of a nonce (routes
    /// moved; the nonces themselves stay with the identities that keep them).
    func keepOnly(slots inForce: Set<Int>) {
        writers = writers.filter { inForce.contains($0.key) }
        nonceCopies.removeAll()
        nonceCopyPlans.removeAll()
    }
}

extension DPoPKeyError {
    /// The identity has no DPoP key at all (a `DPoP` token it should never have been given).
    static let noKey = DPoPKeyError("the identity has no dpop key")
}
