// UpstreamRequestHead: the request head as the upstream receives it, written into the
// workspace's `scratch`: the target chosen (the client's verbatim, or rewritten for the route),
// the route's token, the caller's claim headers (`inbound`), and for a `DPoP` token the proof signed
// for that very target (RFC 9449).
// The connection decides when a head goes out; this decides what it says.

import HTTP1
import JOSE

enum UpstreamRequestHead {
    /// What became of a head to write.
    enum Outcome {
        case written
        /// The client's target does not parse (the routing let it through: nothing is written).
        case unreadableTarget
        /// The DPoP proof could not be signed (OpenSSL failed): nothing is written, and the
        /// request is not to go anywhere.
        case proofNotSigned(JOSEError)
    }

    /// Writes the head of the request in `work`'s parser for `plan`, with `token` (nil: none).
    /// The head is read from the parser, where it stays until the next request, so this also
    /// serves a request that waited for its token or is sent again. The caller passes the
    /// request's framing and `Upgrade` value rather than the request, and `proofs` only for a
    /// DPoP route: copying the request and looking the proofs up cost 100 instructions a request.
    /// `challengedNonce`: the nonce of the `use_dpop_nonce` answer this head replays the request
    /// after, for its proof (`WorkerProofs.withProof`). `forwarding`: `inout` only to be read in
    /// place (`ForwardedHead.writeRequest`).
    @inline(__always)
    static func write(for plan: RoutePlan, token: WorkerTokens.CachedToken?, framing: ForwardedHead.Framing, upgrade: [UInt8]?,
                      forwarding: inout ForwardedHead.Forwarding, proofs: WorkerProofs?, claimLines: [UInt8]? = nil,
                      challengedNonce: [UInt8]? = nil, in work: ExchangeWorkspace) -> Outcome {
        let head = work.parser.head
        let raw = head.target
        // Routes without DPoP do not look at the token's proofing at all.
        let proofing = plan.usesDPoP ? token?.dpop : nil
        // An origin-form target (`/path?query`, as nearly every request sends) on a route that
        // forwards it verbatim goes as it came: its parts are not needed (the placement read them),
        // and it has no authority. It is what `RequestTarget` would give (`originForm` is the whole
        // target), without parsing it a second time.
        if plan.forwardsTargetVerbatim, raw.first == UInt8(ascii: "/") {
            work.scratch.clear()
            let failure = withOptionalBytes(token?.bytes) { tokenBytes -> JOSEError? in
                write(head, target: raw, authority: nil, isAsterisk: false, plan: plan, token: tokenBytes, proofing: proofing,
                      proofs: proofs, framing: framing, upgrade: upgrade, forwarding: &forwarding, claimLines: claimLines,
                      challengedNonce: challengedNonce, into: work)
            }
            guard let failure else { return .written }
            return .proofNotSigned(failure)
        }
        guard let target = RequestTarget(raw) else { return .unreadableTarget }
        work.scratch.clear()
        let verbatim = plan.forwardsTargetVerbatim || target.isAsterisk ? target.originForm : nil
        let failure = withOptionalBytes(token?.bytes) { tokenBytes -> JOSEError? in
            if let verbatim {
                return write(head, target: verbatim, authority: target.authority, isAsterisk: target.isAsterisk, plan: plan,
                             token: tokenBytes, proofing: proofing, proofs: proofs, framing: framing, upgrade: upgrade,
                             forwarding: &forwarding, claimLines: claimLines, challengedNonce: challengedNonce, into: work)
            }
            work.normalizedPath.withUnsafeBytes {
                plan.writeUpstreamTarget(rawPath: target.path, normalizedPath: $0, queryWithMark: target.queryWithMark,
                                         token: tokenBytes, into: &work.rewrittenTarget, scratch: &work.targetScratch)
            }
            return work.rewrittenTarget.withUnsafeBytes { rewritten in
                write(head, target: rewritten, authority: target.authority, isAsterisk: target.isAsterisk, plan: plan,
                      token: tokenBytes, proofing: proofing, proofs: proofs, framing: framing, upgrade: upgrade,
                      forwarding: &forwarding, claimLines: claimLines, challengedNonce: challengedNonce, into: work)
            }
        }
        guard let failure else { return .written }
        return .proofNotSigned(failure)
    }

    /// Writes the head for `target` (as the upstream receives it) with the token; with a
    /// `proofing` (a `DPoP` token on a DPoP route), a fresh proof whose `htu` is the upstream's origin and `target`'s path. Returns the
    /// signing failure, if any (nothing is written then). `authority` and `isAsterisk`: the
    /// client's request-target's (`RequestTarget`).
    @inline(__always)
    private static func write(_ head: HTTPHead, target: UnsafeRawBufferPointer, authority: UnsafeRawBufferPointer?, isAsterisk: Bool,
                              plan: RoutePlan,
                              token: UnsafeRawBufferPointer?, proofing: DPoPProofing?, proofs: WorkerProofs?,
                              framing: ForwardedHead.Framing, upgrade: [UInt8]?, forwarding: inout ForwardedHead.Forwarding,
                              claimLines: [UInt8]?, challengedNonce: [UInt8]?, into work: ExchangeWorkspace) -> JOSEError? {
        let clientHost = authority ?? head.host
        guard let proofing, let proofs else {
            ForwardedHead.writeRequest(head, target: target, plan: plan, framing: framing, forwarding: &forwarding,
                                       clientHost: clientHost, token: token, upgrade: upgrade, claimLines: claimLines,
                                       into: &work.scratch)
            return nil
        }
        // The asterisk-form's target URI has no path (RFC 9110 §7.1).
        let path = isAsterisk ? UnsafeRawBufferPointer(start: nil, count: 0) : target
        do throws(JOSEError) {
            try proofs.withProof(proofing, method: head.methodName, plan: plan, target: path,
                                 challengedNonce: challengedNonce, nonceVersion: &work.dpopNonceVersion) { proof in
                ForwardedHead.writeRequest(head, target: target, plan: plan, framing: framing, forwarding: &forwarding,
                                           clientHost: clientHost, token: token, proof: proof, upgrade: upgrade,
                                           claimLines: claimLines, into: &work.scratch)
            }
            return nil
        } catch {
            return error
        }
    }
}

/// Calls `body` with a view of `bytes`, or with nil.
func withOptionalBytes<R>(_ bytes: [UInt8]?, _ body: (UnsafeRawBufferPointer?) -> R) -> R {
    guard let bytes else { return body(nil) }
    return bytes.withUnsafeBytes { body($0) }
}
