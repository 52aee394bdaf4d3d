import JSON
import OAuth2
import SafeText

/// Reads the members of one JSON object by key, reporting unknown and duplicate keys as it
/// is created and type errors as members are read.
struct ObjectReader {
    let context: DecodingContext
    let path: JSONPath
    /// Where the object starts, and where it ends (where a missing key is reported).
    let offset: Int
    let lastOffset: Int
    /// The members in document order, first occurrence of each key only.
    let fields: [Member]

    /// One member: a struct, not a tuple, so that an array of them is destroyed by its own
    /// code, not the runtime's generic tuple destruction (5% of decoding 10,000 routes).
    struct Member {
        let key: String
        let field: Field
    }

    /// Nil (after reporting a type mismatch) when the value is not an object. With
    /// `knownKeys` nil, any key is allowed (maps like `params`).
    init?(_ field: Field, knownKeys: [String]?, in context: DecodingContext) {
        guard case .object(let members) = field.value.kind else {
            context.typeMismatch(field, expected: "an object")
            return nil
        }
        self.context = context
        self.path = field.path
        self.offset = field.value.offset
        self.lastOffset = field.value.lastOffset
        var fields: [Member] = []
        fields.reserveCapacity(members.count)
        // A key is looked for among the keys before it: most objects have a handful, where
        // hashing each into a set was half the cost of reading an object (callgrind, a file of
        // 10,000 routes). A large map (`identities`) is hashed.
        var seen: Set<String>? = members.count > Self.keysComparedInPlace ? Set(minimumCapacity: members.count) : nil
        for (position, member) in members.enumerated() {
            let memberPath = field.path.key(member.key)
            let repeated = if seen != nil {
                !seen!.insert(member.key).inserted
            } else {
                members[..<position].contains { $0.key.utf8.count == member.key.utf8.count && $0.key == member.key }
            }
            if repeated {
                context.report("duplicate key \"\(member.key)\"", at: memberPath, offset: member.keyOffset)
            } else if let knownKeys, !knownKeys.contains(where: { $0.utf8.count == member.key.utf8.count && $0 == member.key }) {
                context.report("unknown key \"\(member.key)\"" + didYouMean(member.key, among: knownKeys),
                               at: memberPath, offset: member.keyOffset)
            } else {
                fields.append(Member(key: member.key, field: Field(value: member.value, path: memberPath)))
            }
        }
        self.fields = fields
    }

    /// Up to this many members, a repeated key is found by comparing each key with those before it.
    static let keysComparedInPlace = 16

    init?(_ value: JSONNode, at path: JSONPath, knownKeys: [String]?, in context: DecodingContext) {
        self.init(Field(value: value, path: path), knownKeys: knownKeys, in: context)
    }

    func field(_ key: String) -> Field? {
        // Lengths first: most keys asked for are absent, and comparing two different Strings
        // costs far more than comparing their lengths (a route asks for 13 keys).
        let length = key.utf8.count
        return fields.first { $0.key.utf8.count == length && $0.key == key }?.field
    }

    /// True when the key, or its `…File` form, is set.
    func has(_ key: String) -> Bool {
        field(key) != nil || field(key + "File") != nil
    }

    /// The field, or nil after reporting that the required key is missing.
    func required(_ key: String) -> Field? {
        guard let field = field(key) else {
            context.report("required key \"\(key)\" is missing", at: path.key(key), offset: lastOffset)
            return nil
        }
        return field
    }

    func nonEmptyString(_ key: String) -> String? {
        field(key).flatMap(context.nonEmptyString)
    }

    func bool(_ key: String) -> Bool? {
        field(key).flatMap(context.bool)
    }

    func seconds(_ key: String) -> Double? {
        field(key).flatMap(context.seconds)
    }

    func parsed<T>(_ key: String, _ parse: (String) throws(InvalidValue) -> T) -> T? {
        field(key).flatMap { context.parsed($0, parse) }
    }

    /// The resolved path a file key names, reporting nothing (reading the file reported its
    /// problems); nil when the key is absent or not a string whose `${NAME}`s resolve.
    func filePath(_ key: String) -> String? {
        guard case .string(let raw)? = field(key)?.value.kind,
              case .success(let path) = EnvironmentInterpolation.expand(raw, environment: context.environment),
              !path.isEmpty else { return nil }
        return context.files.resolvePath(path)
    }

    /// A secret given inline (`clientSecret`) or as a file (`clientSecretFile`), not both.
    func secret(_ key: String) -> Secret? {
        let fileKey = key + "File"
        switch (field(key), field(fileKey)) {
        case (nil, nil):
            return nil
        case (_?, let file?):
            context.report("set either \(key) or \(fileKey), not both", at: file)
            return nil
        case (let inline?, nil):
            return context.nonEmptyString(inline).map(Secret.init)
        case (nil, let file?):
            return context.files.secretFileContent(file).map(Secret.init)
        }
    }
}

/// ` (did you mean "x"?)` when a candidate is within edit distance 2 of `word`, else "".
func didYouMean(_ word: String, among candidates: some Sequence<String>) -> String {
    let lowered = word.lowercased()
    let best = candidates
        .map { (candidate: $0, distance: editDistance(lowered, $0.lowercased())) }
        .filter { $0.distance <= 2 && $0.distance < $0.candidate.count }
        .min { $0.distance < $1.distance }
    return best.map { " (did you mean \"\($0.candidate)\"?)" } ?? ""
}

/// Levenshtein distance over Unicode scalars.
func editDistance(_ a: String, _ b: String) -> Int {
    let a = Array(a.unicodeScalars), b = Array(b.unicodeScalars)
    guard !a.isEmpty else { return b.count }
    guard !b.isEmpty else { return a.count }
    var previous = Array(0...b.count)
    var current = [Int](repeating: 0, count: b.count + 1)
    for i in 1...a.count {
        current[0] = i
        for j in 1...b.count {
            let substitution = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)
            current[j] = min(previous[j] + 1, current[j - 1] + 1, substitution)
        }
        swap(&previous, &current)
    }
    return previous[b.count]
}
