import HTTPFields

/// Routes the requests of a local endpoint by method and path, so each endpoint is one
/// registration (`add`) instead of a case in a `switch` over path strings. Patterns are paths
/// whose segments are literals or `{name}` parameters, which match one non-empty segment and
/// reach the handler percent-decoded (`/identities/{name}/refresh`). A path that some pattern
/// matches, but not for this method, is answered by `methodNotAllowed` with the methods that
/// would be (for `Allow`); a path no pattern matches, by `notFound`. Pure: no socket, no loop.
public struct LocalRouter {
    public typealias Handler = (LocalRequest, Parameters) -> LocalResponse
    /// A handler that answers later, through the reply (LocalReply.swift).
    public typealias LaterHandler = (LocalRequest, Parameters, LocalReply) -> Void

    /// The values of a pattern's `{name}` segments.
    public struct Parameters: Sendable {
        fileprivate var values: [String: String] = [:]
        public subscript(name: String) -> String? { values[name] }
    }

    private enum Segment: Equatable {
        case literal(String)
        case parameter(String)
    }

    private struct Route {
        let method: String
        let segments: [Segment]
        let answer: (LocalRequest, Parameters) -> LocalAnswer
    }

    private var routes: [Route] = []
    private let notFound: (LocalRequest) -> LocalResponse
    private let methodNotAllowed: (LocalRequest, _ allowed: [String]) -> LocalResponse

    public init(notFound: @escaping (LocalRequest) -> LocalResponse,
                methodNotAllowed: @escaping (LocalRequest, _ allowed: [String]) -> LocalResponse) {
        self.notFound = notFound
        self.methodNotAllowed = methodNotAllowed
    }

    /// Registers `handler` for `method` (upper case, as on the wire) on `pattern`. A pattern
    /// registered twice for one method is a programming error.
    public mutating func add(_ method: String, _ pattern: String, _ handler: @escaping Handler) {
        add(method, pattern, answer: { .now(handler($0, $1)) })
    }

    /// Registers a handler that answers later (from any thread) for `method` on `pattern`;
    /// with `deadline`, its response is sent when the handler has not answered in time.
    public mutating func addLater(_ method: String, _ pattern: String, deadline: ((Parameters) -> LocalDeadline)? = nil,
                                  _ handler: @escaping LaterHandler) {
        add(method, pattern, answer: { request, parameters in
            let start = { (reply: LocalReply) in handler(request, parameters, reply) }
            guard let deadline else { return .later(start) }
            return .laterWithin(deadline(parameters), start)
        })
    }

    private mutating func add(_ method: String, _ pattern: String, answer: @escaping (LocalRequest, Parameters) -> LocalAnswer) {
        let segments = Self.split(pattern).map { part -> Segment in
            if part.hasPrefix("{") && part.hasSuffix("}") && part.count > 2 {
                return .parameter(String(part.dropFirst().dropLast()))
            }
            return .literal(part)
        }
        precondition(!routes.contains { $0.method == method && $0.segments == segments }, "\(method) \(pattern) is registered twice")
        routes.append(Route(method: method, segments: segments, answer: answer))
    }

    /// The answer of a router with no `addLater` route.
    public func respond(to request: LocalRequest) -> LocalResponse {
        guard case .now(let response) = answer(to: request) else {
            preconditionFailure("\(request.method) \(request.path) answers later: use answer(to:)")
        }
        return response
    }

    public func answer(to request: LocalRequest) -> LocalAnswer {
        let parts = Self.split(request.path)
        var allowed: [String] = []
        for route in routes {
            guard let parameters = Self.match(route.segments, parts) else { continue }
            if route.method == request.method { return route.answer(request, parameters) }
            if !allowed.contains(route.method) { allowed.append(route.method) }
        }
        return .now(allowed.isEmpty ? notFound(request) : methodNotAllowed(request, allowed))
    }

    /// The segments of a path (`/a/b` → `a`, `b`; `/` → none). Empty segments are kept, so
    /// `/a//b` never matches `/a/{x}/b` with an empty `x`.
    private static func split(_ path: String) -> [String] {
        guard path != "/" else { return [] }
        return path.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map(String.init)
    }

    private static func match(_ segments: [Segment], _ parts: [String]) -> Parameters? {
        guard segments.count == parts.count else { return nil }
        var parameters = Parameters()
        for (segment, part) in zip(segments, parts) {
            switch segment {
            case .literal(let literal):
                guard literal == part else { return nil }
            case .parameter(let name):
                guard !part.isEmpty, let decoded = PercentDecoding.string(Substring(part)), !decoded.isEmpty else { return nil }
                parameters.values[name] = decoded
            }
        }
        return parameters
    }
}
