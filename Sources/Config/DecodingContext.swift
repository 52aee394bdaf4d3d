import HTTPFields
import JSON
import WatchedFiles

/// A JSON value together with its path, as handed to the value decoders.
struct Field {
    var value: JSONNode
    var path: JSONPath
}

/// What every decoder of one config file shares: the environment and base directory used to
/// resolve values, every problem found so far, and the readers of single values (strings with
/// `${NAME}` resolved, numbers, booleans, arrays) that report a wrong value where it is.
///
/// The sections of the file have decoders of their own (`RelayConfigDecoding` for the top
/// level, `RouteDecoding`, `IdentityDecoding`, `StoreDecoding`…), each a small value over this
/// one shared context, so that their problems land in one list.
///
/// Decoders never stop at a problem: they report it, return nil (the caller then keeps its
/// default) and go on, so one run lists every error in the file. `finish` sorts the problems
/// into document order by the byte offset where each was found.
final class DecodingContext {
    let environment: [String: String]
    let baseDirectory: String
    private var problems: [(offset: Int, path: JSONPath, message: String)] = []
    /// The files read into long-lived objects (certificates, keys, CA bundles, the DPoP key, the
    /// store's key), in document order: a change to one re-applies the configuration.
    private(set) var watchedFiles: [WatchedFile] = []

    init(environment: [String: String], baseDirectory: String) {
        self.environment = environment
        self.baseDirectory = baseDirectory
    }

    var hasProblems: Bool { !problems.isEmpty }

    /// The files the config names, resolved against `baseDirectory`.
    var files: ReferencedFiles { ReferencedFiles(context: self) }

    /// Records that the file `path` (resolved) named at `field` is watched for changes, with its
    /// identity now: call it before the file is read (the watcher starts from that identity).
    func watch(_ field: Field, path: String) {
        watchedFiles.append(WatchedFile(key: field.path.description, path: path, atLoad: FileIdentity.observe(path: path)))
    }

    func report(_ message: String, at path: JSONPath, offset: Int) {
        problems.append((offset, path, message))
    }

    func report(_ message: String, at field: Field) {
        var message = message
        if case .string(let raw) = field.value.kind {
            message = EnvironmentInterpolation.hidingValues(referencedBy: raw, in: message, environment: environment)
        }
        report(message, at: field.path, offset: field.value.offset)
    }

    /// The problems in document order (stable for problems at the same place), with lines
    /// and columns taken from the source.
    func finish(source: [UInt8]) -> [ConfigError] {
        problems.enumerated()
            .sorted { ($0.element.offset, $0.offset) < ($1.element.offset, $1.offset) }
            .map { _, problem in
                let location = SourceLocation(offset: problem.offset, in: source)
                return ConfigError(path: problem.path.description, message: problem.message,
                                   line: location.line, column: location.column)
            }
    }

    // MARK: - Scalar decoders

    func typeMismatch(_ field: Field, expected: String) {
        report("expected \(expected), got \(field.value.typeName)", at: field)
    }

    /// A string with `${NAME}` references resolved.
    func string(_ field: Field) -> String? {
        guard case .string(let raw) = field.value.kind else {
            typeMismatch(field, expected: "a string")
            return nil
        }
        switch EnvironmentInterpolation.expand(raw, environment: environment) {
        case .success(let value):
            return value
        case .failure(let problem):
            report(problem.message, at: field)
            return nil
        }
    }

    /// A string that must not be empty once resolved.
    func nonEmptyString(_ field: Field) -> String? {
        guard let value = string(field) else { return nil }
        guard !value.isEmpty else {
            report("must not be empty", at: field)
            return nil
        }
        return value
    }

    /// A string turned into a value by `parse`, whose error message is reported at the field.
    func parsed<T>(_ field: Field, _ parse: (String) throws(InvalidValue) -> T) -> T? {
        guard let text = string(field) else { return nil }
        do {
            return try parse(text)
        } catch {
            report(error.message, at: field)
            return nil
        }
    }

    func bool(_ field: Field) -> Bool? {
        guard case .bool(let value) = field.value.kind else {
            typeMismatch(field, expected: "a boolean (true or false)")
            return nil
        }
        return value
    }

    /// A whole number within `range`.
    func integer(_ field: Field, in range: ClosedRange<Int>, rangeDescription: String) -> Int? {
        guard case .number(let text) = field.value.kind else {
            typeMismatch(field, expected: "an integer")
            return nil
        }
        guard let value = Int(text) ?? Double(text).flatMap({ $0.rounded() == $0 ? Int(exactly: $0) : nil }) else {
            report("expected an integer, got \(text)", at: field)
            return nil
        }
        guard range.contains(value) else {
            report("must be \(rangeDescription), got \(value)", at: field)
            return nil
        }
        return value
    }

    /// A duration in seconds: a finite number greater than zero.
    func seconds(_ field: Field) -> Double? {
        guard case .number(let text) = field.value.kind, let value = Double(text) else {
            typeMismatch(field, expected: "a number of seconds")
            return nil
        }
        guard value > 0, value.isFinite else {
            report("must be a number of seconds greater than 0, got \(text)", at: field)
            return nil
        }
        return value
    }

    /// The fields of an array, or nil after reporting a type mismatch.
    func elements(_ field: Field) -> [Field]? {
        guard case .array(let values) = field.value.kind else {
            typeMismatch(field, expected: "an array")
            return nil
        }
        return values.enumerated().map { Field(value: $1, path: field.path.index($0)) }
    }

    /// A string or an array of strings (`"scope": "a b"` or `"scope": ["a", "b"]`).
    func stringOrStrings(_ field: Field) -> [(value: String, field: Field)]? {
        if case .string = field.value.kind {
            return string(field).map { [($0, field)] }
        }
        guard case .array = field.value.kind else {
            typeMismatch(field, expected: "a string or an array of strings")
            return nil
        }
        let elements = elements(field) ?? []
        let values = elements.compactMap { element in string(element).map { ($0, element) } }
        return values.count == elements.count ? values : nil
    }

    /// An object whose values are all strings, in document order; keys are reported by the
    /// caller's validation.
    func stringMembers(_ field: Field) -> [(key: String, value: String, field: Field)]? {
        guard let object = ObjectReader(field, knownKeys: nil, in: self) else { return nil }
        var all = true
        let members = object.fields.compactMap { member -> (String, String, Field)? in
            guard let value = string(member.field) else {
                all = false
                return nil
            }
            return (member.key, value, member.field)
        }
        return all ? members : nil
    }
}
