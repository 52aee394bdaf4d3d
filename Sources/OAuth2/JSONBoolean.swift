import Foundation

/// Tells a JSON boolean from a number in what `JSONSerialization` returns. Both arrive as
/// `NSNumber`, and Foundation bridges the numbers 0 and 1 to `Bool` too, so `value is Bool` holds
/// for `"expires_in": 1`; only the class of the boolean singletons tells `true` from `1`.
enum JSONBoolean {
    private static let booleanClass = ObjectIdentifier(type(of: NSNumber(value: true)))

    /// The boolean, when `value` is a JSON `true` or `false`; nil for anything else (1 and 0 included).
    static func value(of value: Any?) -> Bool? {
        guard let number = value as? NSNumber, ObjectIdentifier(type(of: number)) == booleanClass else { return nil }
        return number.boolValue
    }
}
