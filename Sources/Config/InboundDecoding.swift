import Endpoints
import HTTPFields
import JOSE

/// Reads `routes[].inbound`: the issuer whose bearer JWTs the route requires, where its keys are,
/// what a token must say, and which claims go on as headers. Every key is read before deciding,
/// so that each mistake is reported at once.
struct InboundDecoding {
    let context: DecodingContext

    static let inboundKeys = ["issuer", "audiences", "jwksUrl", "algorithms", "requiredScopes", "clockSkewSeconds", "claimHeaders",
                              "stripAuthorization", "maxTokens", "tls", "introspectionUrl", "introspectionIdentity",
                              "introspectionCacheSeconds", "dpop", "dpopWindowSeconds", "dpopAlgorithms"]

    /// `routeIdentity`: the route's identity, which asks about opaque tokens unless
    /// `introspectionIdentity` names another; `identityNames`: the identities defined.
    func decodeInbound(_ field: Field, routeIdentity: String? = nil, identityNames: [String] = []) -> InboundRules? {
        guard let object = ObjectReader(field, knownKeys: Self.inboundKeys, in: context) else { return nil }
        let issuer = object.required("issuer").flatMap { field in
            context.parsed(field) { text throws(InvalidValue) in
                _ = try Self.idpURL(text, allowsQuery: false, what: "the issuer's URL")
                return text
            }
        }
        let audiences = object.required("audiences").flatMap(decodeAudiences)
        let jwksUrl = object.field("jwksUrl").map { field in
            context.parsed(field) { text throws(InvalidValue) in try Self.idpURL(text, allowsQuery: true, what: "the JWKS URL") }
        }
        let algorithms = object.field("algorithms").map { decodeAlgorithms($0, hmacRefusal: Self.jwksHMACRefusal) }
        let scopes = object.field("requiredScopes").map(decodeScopes)
        let skew = object.field("clockSkewSeconds").map {
            context.integer($0, in: 0...InboundRules.maxClockSkewSeconds,
                            rangeDescription: "a number of seconds from 0 to \(InboundRules.maxClockSkewSeconds)")
        }
        let claimHeaders = object.field("claimHeaders").map(decodeClaimHeaders)
        let strip = object.field("stripAuthorization").map(context.bool)
        let maxTokens = object.field("maxTokens").map {
            context.integer($0, in: 1...InboundRules.maxMaxTokens, rangeDescription: "from 1 to \(InboundRules.maxMaxTokens)")
        }
        // Discovery and the JWKS are asked over the scheme of the URL fetched first.
        let fetched: (scheme: URLScheme?, name: String) = if let jwksUrl { (jwksUrl?.scheme, "jwksUrl") } else {
            (issuer.flatMap { try? HTTPURL(absolute: $0, allowsQuery: false) }?.scheme, "the issuer")
        }
        let tls = object.field("tls").map {
            TLSSettingsDecoding(context: context).decodeTLS($0, endpoint: fetched.scheme, endpointName: fetched.name)
        }
        let introspection = decodeIntrospection(object, in: field, routeIdentity: routeIdentity, identityNames: identityNames)
        let dpop = decodeDPoP(object)
        // A key given with a bad value (`.some(nil)`) fails the whole block; a key left out is nil.
        guard let issuer, let audiences, jwksUrl != .some(nil), algorithms != .some(nil), scopes != .some(nil), skew != .some(nil),
              claimHeaders != .some(nil), strip != .some(nil), maxTokens != .some(nil), tls != .some(nil),
              introspection != .some(nil), let dpop else { return nil }
        return InboundRules(issuer: issuer, audiences: audiences, jwksUrl: jwksUrl.flatMap { $0 },
                            algorithms: algorithms.flatMap { $0 } ?? InboundRules.defaultAlgorithms,
                            requiredScopes: scopes.flatMap { $0 } ?? [],
                            clockSkewSeconds: skew.flatMap { $0 } ?? InboundRules.defaultClockSkewSeconds,
                            claimHeaders: claimHeaders.flatMap { $0 } ?? [], stripAuthorization: strip.flatMap { $0 } ?? false,
                            maxTokens: maxTokens.flatMap { $0 } ?? InboundRules.defaultMaxTokens, tls: tls.flatMap { $0 },
                            introspection: introspection.flatMap { $0 }, dpop: dpop)
    }

    /// `introspectionUrl`, `introspectionIdentity`, `introspectionCacheSeconds`: nil when none is
    /// given (no introspection), `.some(nil)` when one is wrong. Either of the first two turns
    /// introspection on; without a URL the endpoint is discovered from the issuer.
    private func decodeIntrospection(_ object: ObjectReader, in field: Field, routeIdentity: String?,
                                     identityNames: [String]) -> InboundIntrospection?? {
        let urlField = object.field("introspectionUrl"), identityField = object.field("introspectionIdentity")
        let cacheField = object.field("introspectionCacheSeconds")
        guard urlField != nil || identityField != nil || cacheField != nil else { return nil }
        let url = urlField.map { field in
            context.parsed(field) { text throws(InvalidValue) in try Self.idpURL(text, allowsQuery: true, what: "the introspection URL") }
        }
        let named = identityField.map { field -> String? in
            guard let name = context.nonEmptyString(field) else { return nil }
            guard identityNames.contains(name) else {
                context.report("unknown identity \"\(name)\"" + (identityNames.isEmpty ? "; no identities are defined" : ""), at: field)
                return nil
            }
            return name
        }
        let cache = cacheField.map {
            context.integer($0, in: 0...InboundIntrospection.maxCacheSeconds,
                            rangeDescription: "a number of seconds from 0 to \(InboundIntrospection.maxCacheSeconds)")
        }
        if urlField == nil && identityField == nil {
            context.report("introspectionCacheSeconds needs introspectionUrl or introspectionIdentity (introspection is off)",
                           at: cacheField!)
            return .some(nil)
        }
        guard let identity = named.flatMap({ $0 }) ?? (named == nil ? routeIdentity : nil) else {
            if named == nil {
                context.report("introspection asks as an identity's client: set introspectionIdentity, or give the route an identity",
                               at: urlField ?? field)
            }
            return .some(nil)
        }
        guard url != .some(nil), cache != .some(nil) else { return .some(nil) }
        return InboundIntrospection(url: url.flatMap { $0 }, identity: identity,
                                    cacheSeconds: cache.flatMap { $0 } ?? InboundIntrospection.defaultCacheSeconds)
    }

    /// `dpop`, `dpopWindowSeconds`, `dpopAlgorithms` (nil: one is wrong).
    private func decodeDPoP(_ object: ObjectReader) -> InboundDPoP? {
        let mode = object.field("dpop").map { field in
            context.parsed(field) { text throws(InvalidValue) in
                guard let mode = InboundDPoP.Mode(rawValue: text) else {
                    throw InvalidValue("expected one of \(InboundDPoP.Mode.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ")), "
                                       + "got \"\(text)\"")
                }
                return mode
            }
        }
        let window = object.field("dpopWindowSeconds").map {
            context.integer($0, in: 1...InboundDPoP.maxWindowSeconds, rangeDescription: "a number of seconds from 1 to \(InboundDPoP.maxWindowSeconds)")
        }
        let algorithms = object.field("dpopAlgorithms").map { decodeAlgorithms($0, hmacRefusal: Self.proofHMACRefusal) }
        guard mode != .some(nil), window != .some(nil), algorithms != .some(nil) else { return nil }
        return InboundDPoP(mode: mode.flatMap { $0 } ?? .allowed, windowSeconds: window.flatMap { $0 } ?? InboundDPoP.defaultWindowSeconds,
                           algorithms: algorithms.flatMap { $0 } ?? InboundDPoP.defaultAlgorithms)
    }

    private static let jwksHMACRefusal = "HS256 is refused: a JWKS publishes public keys, and a public key taken as an HMAC secret "
        + "is how algorithm confusion forges tokens"
    private static let proofHMACRefusal = "HS256 is refused: a DPoP proof is signed with the public key in its own header, "
        + "and a shared secret there proves nothing"


    /// An IdP URL the relay fetches from: https, or plain http to a loopback host (a local IdP).
    static func idpURL(_ text: String, allowsQuery: Bool, what: String) throws(InvalidValue) -> HTTPURL {
        let url = try HTTPURL.parse(text, allowsQuery: allowsQuery)
        guard url.scheme == .https || HostSyntax.isLoopback(url.host) else {
            throw InvalidValue("\(what) must be https:// (plain http:// only to a loopback host, for a local IdP), got \"\(text)\"")
        }
        return url
    }

    private func decodeAudiences(_ field: Field) -> [String]? {
        guard let elements = context.elements(field) else { return nil }
        guard !elements.isEmpty else {
            context.report("must list at least one audience: a token's aud must contain one of them", at: field)
            return nil
        }
        let audiences = elements.compactMap(context.nonEmptyString)
        return audiences.count == elements.count ? unique(audiences) : nil
    }

    private func decodeAlgorithms(_ field: Field, hmacRefusal: String) -> [JWSAlgorithm]? {
        guard let elements = context.elements(field) else { return nil }
        guard !elements.isEmpty else {
            context.report("must list at least one algorithm (leave the key out for RS256, PS256, ES256 and EdDSA)", at: field)
            return nil
        }
        let algorithms = elements.compactMap { element in
            context.parsed(element) { name throws(InvalidValue) in
                if name == "HS256" { throw InvalidValue(hmacRefusal) }
                if name.lowercased() == "none" { throw InvalidValue("\"none\" (an unsigned token) is never accepted") }
                guard let algorithm = JWSAlgorithm(rawValue: name) else {
                    throw InvalidValue("unknown algorithm \"\(name)\"; use RS256, PS256, ES256 or EdDSA")
                }
                return algorithm
            }
        }
        guard algorithms.count == elements.count else { return nil }
        var seen = Set<JWSAlgorithm>()
        return algorithms.filter { seen.insert($0).inserted }
    }

    /// Scope tokens as RFC 6749 §3.3 writes them: printable ASCII but space, `"` and `\`.
    private func decodeScopes(_ field: Field) -> [String]? {
        guard let elements = context.elements(field) else { return nil }
        let scopes = elements.compactMap { element in
            context.parsed(element) { scope throws(InvalidValue) in
                let valid = !scope.isEmpty && scope.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }
                guard valid else {
                    throw InvalidValue("a scope is printable ASCII without spaces, quotes or backslashes (one scope per entry), got \"\(scope)\"")
                }
                return scope
            }
        }
        return scopes.count == elements.count ? unique(scopes) : nil
    }

    /// `claim: header name`; names are tokens, none the relay manages or a credential, none twice
    /// (ignoring case).
    private func decodeClaimHeaders(_ field: Field) -> [ClaimHeader]? {
        guard let members = context.stringMembers(field) else { return nil }
        var headers: [ClaimHeader] = []
        var byName: [String: String] = [:]
        var valid = true
        for (claim, name, member) in members {
            if claim.isEmpty {
                context.report("a claim name must not be empty", at: member)
                valid = false
                continue
            }
            do {
                _ = try HeaderRules.validName(name, forbidden: InboundRules.forbiddenClaimHeaders)
            } catch {
                context.report(error.message, at: member)
                valid = false
                continue
            }
            if let other = byName[name.lowercased()] {
                context.report("header \"\(name)\" already carries the claim \"\(other)\" (header names ignore case)", at: member)
                valid = false
                continue
            }
            byName[name.lowercased()] = claim
            headers.append(ClaimHeader(claim: claim, header: name))
        }
        return valid ? headers : nil
    }

    private func unique(_ values: [String]) -> [String] {
        var seen = Set<String>()
        return values.filter { seen.insert($0).inserted }
    }
}

extension InboundDecoding {
    /// A claim's header is not one the route writes otherwise: a `setHeaders` entry, or the header
    /// that carries its identity's token.
    func checkClaimHeaders(of rules: InboundRules, on route: Route, at field: Field) {
        let path = field.path.key("claimHeaders")
        var tokenHeader: String?
        if route.identity != nil, case .header(let name, _) = route.inject { tokenHeader = name.lowercased() }
        for entry in rules.claimHeaders {
            let name = entry.header.lowercased()
            if route.setHeaders.contains(where: { $0.name.lowercased() == name }) {
                context.report("\"\(entry.header)\" is set by setHeaders: a header carries either a claim or a fixed value",
                               at: path.key(entry.claim), offset: field.value.offset)
            } else if name == tokenHeader {
                context.report("\"\(entry.header)\" carries the injected token and cannot also carry a claim",
                               at: path.key(entry.claim), offset: field.value.offset)
            }
        }
    }
}
