// WorkerProofs: one worker's side of DPoP (RFC 9449) for forwarded requests.
//
// A `DPoP` token goes upstream as `Authorization: DPoP <token>` with a `DPoP` proof made for that
// request alone (its method, the target URI the upstream sees, a fresh `jti`, `iat`, the token's
// `ath`, and the upstream's latest nonce). Proofs are signed on the worker, so each worker keeps
// its own `DPoPProofWriter` per identity (its signing state is one thread's) and its own memory
// of each route's upstream nonce: no lock between workers. A nonce a worker has not seen yet costs
// that worker one `use_dpop_nonce` answer, replayed at once (Exchange+Response.swift).

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
    /// The latest `DPoP-Nonce` of each route's upstream, by route position, with the plan it
    /// came from (a plan of other settings at the same position does not use it).
    private var nonces: [(plan: RoutePlan, nonce: [UInt8])?] = []
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
    /// the call). `target`: the request-target as the upstream receives it.
    func withProof<Result>(_ proofing: DPoPProofing, method: UnsafeRawBufferPointer, plan: RoutePlan,
                           target: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) -> Result) throws(JOSEError) -> Result {
        let nonce = nonce(for: plan)
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

    func nonce(for plan: RoutePlan) -> [UInt8]? {
        guard plan.position < nonces.count, let entry = nonces[plan.position], entry.plan === plan else { return nil }
        return entry.nonce
    }

    /// `plan`'s upstream sent `nonce` (already checked by `DPoPChallenge.nonce`).
    func remember(_ nonce: UnsafeRawBufferPointer, for plan: RoutePlan) {
        if let known = self.nonce(for: plan), known.elementsEqual(nonce) { return }
        if plan.position >= nonces.count { nonces.append(contentsOf: repeatElement(nil, count: plan.position + 1 - nonces.count)) }
        nonces[plan.position] = (plan, Array(nonce))
    }

    /// How many identities this worker keeps a proof writer for.
    var writerCount: Int { writers.count }

    /// A reload: writers of identities no longer in force go, and every nonce (routes moved).
    func keepOnly(slots inForce: Set<Int>) {
        writers = writers.filter { inForce.contains($0.key) }
        nonces.removeAll()
    }
}

extension DPoPKeyError {
    /// The identity has no DPoP key at all (a `DPoP` token it should never have been given).
    static let noKey = DPoPKeyError("the identity has no dpop key")
}
