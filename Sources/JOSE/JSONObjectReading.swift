import JSON

extension JSONValue {
    /// The JSON object in `bytes`, or `.malformed(what)` when they hold anything else. Where a
    /// member name repeats, only the last member stays (RFC 7515 §5.2), in its place.
    static func object(from bytes: [UInt8], what: String) throws(JOSEError) -> JSONValue {
        guard let value = try? JSONValue(parsing: bytes), let members = value.members else {
            throw .malformed("\(what) is not a JSON object")
        }
        var names = Set<String>()
        let lastOfEachName = members.reversed().filter { names.insert($0.name).inserted }
        return .object(lastOfEachName.reversed())
    }
}
