/// Seconds as text without a useless `.0`: `5`, `2.5`.
public enum SecondsText {
    public static func format(_ seconds: Double) -> String {
        seconds.rounded() == seconds && abs(seconds) < 1e15 ? String(Int(seconds)) : String(seconds)
    }
}
