import JSON

/// Where one value of a token response is (`responseFields`): a member name (`access_token`), a
/// path of member names into nested objects joined by dots (`authed_user.access_token`, Slack's
/// user token), or several such paths tried in order (Slack answers a user token's code exchange
/// under `authed_user` and its refreshes at the top). The token's path decides the alternative
/// (`resolve`); the answer's other members are read at the same alternative's path
/// (`lookup(in:alternative:)`), so they never come from another object than the token.
///
/// A dot always separates two names: a member whose own name holds a dot cannot be named (no
/// token endpoint the relay knows of uses one), and an empty name (a dot first, last or twice in
/// a row) is refused when the path is made.
public struct ResponseMember: Sendable, Hashable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// The paths in the order they are tried; each has at least one name, none empty.
    public let paths: [[String]]

    /// Why a dotted text names no member.
    public enum PathError: Error, Equatable {
        case emptyName
    }

    /// The member at one dotted path; throws when a name in it is empty.
    public init(dotted: String) throws(PathError) {
        try self.init(alternatives: [dotted])
    }

    /// The first of `alternatives` (dotted paths) that leads to a value; throws when one has an
    /// empty name. At least one path.
    public init(alternatives: [String]) throws(PathError) {
        precondition(!alternatives.isEmpty, "a response member needs a path")
        var paths: [[String]] = []
        for dotted in alternatives {
            let names = dotted.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            guard !names.contains(where: \.isEmpty) else { throw .emptyName }
            paths.append(names)
        }
        self.paths = paths
    }

    /// A fixed name, for the defaults and tests; a literal that is no valid path traps.
    public init(stringLiteral dotted: String) {
        do {
            try self.init(dotted: dotted)
        } catch {
            preconditionFailure("\"\(dotted)\" is no member path")
        }
    }

    /// The paths as configured: `authed_user.access_token or access_token`.
    public var description: String {
        paths.map { $0.joined(separator: ".") }.joined(separator: " or ")
    }

    /// The last name of each path: the member names that may hold this value wherever it is
    /// nested (a body naming one of the token's may hold a token, and is never quoted).
    public var memberNames: [String] {
        paths.compactMap(\.last)
    }

    /// What an answer holds at this member.
    public enum Lookup: Equatable, Sendable {
        /// The value of the first path that leads to one that is not null (else to null), and
        /// that path.
        case value(JSONValue, path: String)
        /// No path leads to a value. The first path stops at a missing (or null) member of the
        /// object at `object` (nil: the answer itself), which has the members `fields`.
        case missing(object: String?, fields: [String])
        /// No path leads to a value, and the first one runs into `prefix`, which holds `held`
        /// (`a string`, `an array`, …), not an object.
        case notAnObject(prefix: String, held: String)

        /// The value found, if any.
        public var value: JSONValue? {
            if case .value(let value, _) = self { value } else { nil }
        }
    }

    /// Looks the member up in an answer's top-level members (`resolve`, without the alternative).
    public func lookup(in members: [String: JSONValue]) -> Lookup {
        resolve(in: members).lookup
    }

    /// Looks the member up, and says which alternative (index into `paths`) it was found by.
    /// The paths are tried in order: the first that leads to a value (not null) wins; a nested
    /// path whose enclosing object the answer has claims the answer even when the member is
    /// missing or null there (Slack's `authed_user` without `access_token` is an error, not a
    /// reason to take the top-level bot token); else the first that leads to null, else the
    /// first path's failure.
    public func resolve(in members: [String: JSONValue]) -> (lookup: Lookup, alternative: Int) {
        var first: (Lookup, Int)?
        var null: (Lookup, Int)?
        for (index, path) in paths.enumerated() {
            let found = Self.walk(path, in: members)
            switch found {
            case .value(.null, _) where path.count > 1: return (found, index)
            case .value(.null, _): null = null ?? (found, index)
            case .value: return (found, index)
            case .missing(let object, _) where path.count > 1 && object == path.dropLast().joined(separator: "."):
                return (found, index)
            default: first = first ?? (found, index)
            }
        }
        return null ?? first ?? (.missing(object: nil, fields: members.keys.sorted()), 0)
    }

    /// Looks the member up at the path of `alternative` only, the one another member (the token)
    /// was found by: the i-th paths of `responseFields` belong together. A member of one path
    /// reads it whatever the alternative.
    public func lookup(in members: [String: JSONValue], alternative: Int) -> Lookup {
        Self.walk(paths[min(max(alternative, 0), paths.count - 1)], in: members)
    }

    private static func walk(_ path: [String], in members: [String: JSONValue]) -> Lookup {
        var object = members
        for (index, name) in path.enumerated() {
            let prefix = path[...index].joined(separator: ".")
            let parent = index == 0 ? nil : path[..<index].joined(separator: ".")
            guard let value = object[name] else { return .missing(object: parent, fields: object.keys.sorted()) }
            if index == path.count - 1 { return .value(value, path: prefix) }
            if value == .null { return .missing(object: parent, fields: object.keys.sorted()) }
            guard let nested = value.dictionary else { return .notAnObject(prefix: prefix, held: phrase(for: value)) }
            object = nested
        }
        preconditionFailure("a member path has at least one name")
    }

    /// The JSON type of a value that is not an object, as a sentence names it.
    private static func phrase(for value: JSONValue) -> String {
        switch value {
        case .string: "a string"
        case .integer, .number: "a number"
        case .bool: "a boolean"
        case .null: "null"
        case .array: "an array"
        case .object: "an object"
        }
    }
}
