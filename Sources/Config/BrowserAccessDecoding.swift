import HTTPFields

/// Reads `routes[].browser`: the origins, methods and headers CORS allows, each list checked
/// so that no wildcard lets every page act with the route's credential.
struct BrowserAccessDecoding {
    let context: DecodingContext

    func decodeBrowserAccess(_ field: Field) -> BrowserAccess? {
        guard let object = ObjectReader(field, knownKeys: BrowserAccess.knownKeys, in: context) else { return nil }
        // Every key is read before deciding, so that each mistake is reported at once.
        let origins = object.required("allowOrigins").flatMap { nonEmptyStrings($0, parse: BrowserAccess.parseOrigin) }
        let methods = object.field("allowMethods").map { field in
            nonEmptyStrings(field) { method throws(InvalidValue) in
                guard ASCII.isToken(method) else { throw InvalidValue("must be a method name such as \"PUT\", got \"\(method)\"") }
                let upper = method.uppercased()
                guard upper != "CONNECT" && upper != "TRACE" else { throw InvalidValue("the relay does not forward \(upper)") }
                return method
            }
        }
        let headers = object.field("allowHeaders").map { nonEmptyStrings($0, parse: Self.corsHeaderName) }
        let exposed = object.field("exposeHeaders").map { nonEmptyStrings($0, parse: Self.corsHeaderName) }
        let maxAge = object.field("maxAgeSeconds").map {
            context.integer($0, in: 0...86_400, rangeDescription: "a number of seconds from 0 to 86400 (browsers cap it lower)")
        }
        // A key given with a bad value (`.some(nil)`) fails the whole block; a key left out is nil.
        guard let origins, methods != .some(nil), headers != .some(nil), exposed != .some(nil), maxAge != .some(nil) else { return nil }
        return BrowserAccess(allowOrigins: unique(origins), allowMethods: methods?.map(unique),
                             allowHeaders: headers?.map { unique($0.map { $0.lowercased() }) },
                             exposeHeaders: exposed?.map(unique) ?? [],
                             maxAgeSeconds: maxAge.flatMap { $0 } ?? BrowserAccess.defaultMaxAgeSeconds)
    }

    private static func corsHeaderName(_ name: String) throws(InvalidValue) -> String {
        guard ASCII.isToken(name) else { throw InvalidValue("must be a header name, got \"\(name)\"") }
        guard name != "*" else {
            throw InvalidValue("no wildcard: list the header names (with credentials, browsers read \"*\" as a name)")
        }
        return name
    }

    /// A non-empty array of strings, each parsed; nil after reporting what is wrong.
    private func nonEmptyStrings(_ field: Field, parse: (String) throws(InvalidValue) -> String) -> [String]? {
        guard let elements = context.elements(field) else { return nil }
        guard !elements.isEmpty else {
            context.report("must list at least one value (leave the key out for the default)", at: field)
            return nil
        }
        let values = elements.compactMap { context.parsed($0, parse) }
        return values.count == elements.count ? values : nil
    }

    private func unique(_ values: [String]) -> [String] {
        var seen = Set<String>()
        return values.filter { seen.insert($0).inserted }
    }
}
