import FoundationEssentials
import OAuth2

/// Checks between a route and its identity that neither can make alone, reported where `check`
/// shows them:
/// - `certificateBoundUpstream` (RFC 8705 certificate-bound tokens): the route presents its
///   identity's client certificate to the upstream, so the identity must have one (its token
///   endpoint sees it, and binds the tokens to it), the upstream must be https, and a client
///   certificate of the route's own must be the same one.
/// - An identity with `dpop` sends its `DPoP` tokens as `Authorization: DPoP …` with a `DPoP`
///   proof (RFC 9449 §7.1): its routes inject into `Authorization`, not another header or the
///   query, and do not set `DPoP` themselves.
/// - `inbound.introspectionIdentity` (or the route's identity) asks the introspection endpoint
///   as a client that authenticates.
struct RouteIdentityChecks {
    let context: DecodingContext

    func checkRouteIdentities(_ routesField: Field, routes: [Route], identities: [String: Identity]) {
        guard case .array(let elements) = routesField.value.kind else { return }
        // Asked of each identity once, not of each route's: copying a route and its identity
        // for each of 10,000 routes was a tenth of decoding them.
        let dpopIdentities = Set(identities.lazy.filter { $0.value.dpop != nil }.map(\.key))
        for position in routes.indices {
            // Most routes have nothing to check: their object is read only when one has (with
            // 10,000 routes, reading each was 9% of decoding the file).
            guard routes[position].certificateBoundUpstream || routes[position].inbound?.introspection != nil
                    || routes[position].identity.map(dpopIdentities.contains) == true,
                  routes[position].index < elements.count else { continue }
            let route = routes[position]
            let identity = route.identity.flatMap { identities[$0] }
            let element = Field(value: elements[route.index], path: routesField.path.index(route.index))
            guard let object = ObjectReader(element, knownKeys: nil, in: context) else { continue }
            if route.certificateBoundUpstream, let field = object.field("certificateBoundUpstream") {
                checkCertificateBinding(route, identity: identity, at: field, routeObject: object)
            }
            if let identity, identity.dpop != nil {
                checkDPoPInjection(route, identity: identity, routeObject: object)
            }
            if let introspection = route.inbound?.introspection, let client = identities[introspection.identity],
               let inbound = object.field("inbound") {
                checkIntrospectionClient(client, inbound: inbound)
            }
        }
    }

    /// RFC 7662 §2.1: the introspection endpoint answers authenticated clients only, so the
    /// identity asked as must have a client id and a way to prove it.
    private func checkIntrospectionClient(_ identity: Identity, inbound: Field) {
        switch identity.clientAuth {
        case .publicClient, .unidentified, .clientAssertion(id: nil, _):
            guard let reader = ObjectReader(inbound, knownKeys: nil, in: context) else { return }
            let field = reader.field("introspectionIdentity") ?? reader.field("introspectionUrl") ?? inbound
            context.report("identity \(identity.name) cannot ask the introspection endpoint: it has no client id with a secret, key or "
                           + "assertion to authenticate with (RFC 7662 §2.1)", at: field)
        case .basic, .post, .privateKeyJWT, .clientSecretJWT, .clientAssertion:
            break
        }
    }

    private func checkCertificateBinding(_ route: Route, identity: Identity?, at field: Field, routeObject: ObjectReader) {
        guard let name = route.identity else {
            return context.report("certificateBoundUpstream needs the route's identity: the certificate presented upstream is the "
                                  + "identity's tls.clientCert, to which its tokens are bound", at: field)
        }
        if route.upstream.scheme == .http {
            context.report("certificateBoundUpstream presents a client certificate, which needs TLS; the upstream is http://", at: field)
        }
        // An identity that did not decode has its own errors already.
        guard let identity else { return }
        guard let identityCert = identity.tls?.clientCert else {
            return context.report("identity \(name) presents no client certificate to its token endpoint "
                                  + "(identities.\(name).tls.clientCert), so its tokens are not bound to one (RFC 8705) and there is "
                                  + "none to present upstream", at: field)
        }
        if let routeCert = route.tls?.clientCert, !Self.sameFile(routeCert, identityCert) {
            context.report("the route's own tls.clientCert (\(routeCert)) is not identity \(name)'s (\(identityCert)): the upstream would "
                           + "see a certificate its tokens are not bound to; remove it, the identity's is presented", at: field)
        }
    }

    private func checkDPoPInjection(_ route: Route, identity: Identity, routeObject: ObjectReader) {
        if let field = routeObject.field("setHeaders"), let clash = route.setHeaders.first(where: { $0.name.lowercased() == "dpop" }) {
            context.report("\"\(clash.name)\" carries the relay's DPoP proof (identity \(identity.name) uses DPoP) and cannot also be set",
                           at: field.path.key(clash.name), offset: field.value.offset)
        }
        let sendsInAuthorization = if case .header(let header, _) = route.inject { header.lowercased() == "authorization" } else { false }
        guard !sendsInAuthorization, let field = routeObject.field("inject") else { return }
        context.report("identity \(identity.name) uses DPoP: its tokens go in the Authorization header (\"Authorization: DPoP\" "
                       + "with a DPoP proof, RFC 9449 §7.1), so inject must keep header Authorization", at: field)
    }

    /// The same path, or two files with the same bytes.
    private static func sameFile(_ a: String, _ b: String) -> Bool {
        guard a != b else { return true }
        guard let first = try? ReferencedFiles.contents(of: a).get(), let second = try? ReferencedFiles.contents(of: b).get() else {
            return false
        }
        return first == second
    }
}
