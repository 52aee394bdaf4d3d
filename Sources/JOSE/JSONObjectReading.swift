import JSON

extension JSONValue {
    /// The JSON object in `bytes`, or `.malformed(what)` when they hold anything else.
    static func object(from bytes: [UInt8], what: String) throws(JOSEError) -> JSONValue {
        guard let value = try? JSONValue(parsing: bytes), value.members != nil else {
            throw .malformed("\(what) is not a JSON object")
        }
        return value
    }
}
