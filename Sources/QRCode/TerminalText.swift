extension QRCode {
    /// The symbol as lines of text for a terminal, two rows of modules per line with the Unicode
    /// half blocks ▀ ▄ █ and space, so that it is about as wide as it is tall in a terminal font
    /// (whose cells are roughly twice as tall as they are wide) and half as many lines as a
    /// one-row-per-line drawing.
    ///
    /// Colours: a camera needs dark modules on a light ground, as the standard prints them,
    /// and terminals differ — most draw light text on a dark background, where ink for the dark
    /// modules would show an inverted symbol that many readers refuse. With `ansiColors` (the
    /// default) every line sets black text on a bright white background (SGR 30;107) and resets
    /// the attributes at its end, so the symbol reads the same on any theme. Without it no escape
    /// code is written: block characters are the dark modules, so the text is right only where
    /// the terminal draws dark text on a light background (and it is what tests parse back).
    ///
    /// - Parameter quietZone: light modules around the symbol. The standard asks for 4 (§6.3.8);
    ///   phone cameras read a symbol with 2, which saves two lines and four columns.
    public func terminalText(quietZone: Int = 2, ansiColors: Bool = true) -> String {
        let span = size + 2 * quietZone
        func isDark(_ x: Int, _ y: Int) -> Bool {
            let column = x - quietZone, row = y - quietZone
            return (0..<size).contains(column) && (0..<size).contains(row) && self[column, row]
        }
        var text = ""
        for top in stride(from: 0, to: span, by: 2) {
            if ansiColors { text += "\u{1B}[30;107m" }
            for x in 0..<span {
                switch (isDark(x, top), isDark(x, top + 1)) {
                case (true, true): text += "█"
                case (true, false): text += "▀"
                case (false, true): text += "▄"
                case (false, false): text += " "
                }
            }
            if ansiColors { text += "\u{1B}[0m" }
            text += "\n"
        }
        return text
    }

    /// Columns `terminalText(quietZone:)` takes: one per module.
    public func terminalWidth(quietZone: Int = 2) -> Int { size + 2 * quietZone }
}
