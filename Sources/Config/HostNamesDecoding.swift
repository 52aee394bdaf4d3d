import Routing

/// `hosts` (top level, and per listener): the Host names a listener serves besides the loopback
/// names (`ListenerHosts` in BrowserSafety).
extension DecodingContext {
    func decodeHostNames(_ field: Field) -> [HostPattern]? {
        guard let elements = elements(field) else { return nil }
        let patterns = elements.compactMap { element in
            parsed(element) { text throws(InvalidValue) -> HostPattern in
                guard text != "*" else {
                    throw InvalidValue("\"*\" would serve any name, which is what DNS rebinding needs; list the names")
                }
                do throws(HostPattern.SyntaxError) { return try HostPattern.parse(text) } catch { throw InvalidValue(error.message) }
            }
        }
        return patterns.count == elements.count ? patterns : nil
    }
}
