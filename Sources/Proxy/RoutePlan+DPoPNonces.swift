import Tokens

extension RoutePlan {
    /// A configuration's routes were planned: each DPoP identity of `identities` keeps the shared
    /// upstream nonces of the origins its routes name now, and forgets the others
    /// (UpstreamDPoPNonces.swift). One pass over the plans, so a reload of many routes and
    /// identities stays linear.
    static func keepUpstreamNonces(of plans: [RoutePlan], identities: [IdentityTokens]) {
        var origins: [Int: Set<[UInt8]>] = [:]
        for plan in plans where plan.usesDPoP {
            guard let identity = plan.identity else { continue }
            origins[identity.slot, default: []].insert(plan.dpopTargetOrigin)
        }
        for identity in identities {
            identity.upstreamNonces?.keepOnly(origins: origins[identity.slot] ?? [])
        }
    }
}
