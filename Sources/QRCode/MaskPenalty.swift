/// The score by which the encoder chooses among the eight masks (ISO/IEC 18004:2015 §7.8.3,
/// Table 11): features that make a symbol hard to read cost points, and the mask with the fewest
/// points wins (the lowest-numbered one on a tie).
///
/// - N1 = 3: a run of 5 + i modules of one colour in a row or column costs 3 + i.
/// - N2 = 3: every 2×2 block of one colour costs 3 (a larger block is counted as the 2×2 blocks
///   it contains, overlapping).
/// - N3 = 40: a dark-light-dark-dark-dark-light-dark run (1:1:3:1:1, what a finder pattern looks
///   like across its centre) in a row or column with 4 light modules on either side costs 40.
///   The quiet zone around the symbol is light, so a pattern at an edge counts too. A pattern that
///   overlaps one already counted in the same line (two can share their outer one or three
///   modules) is not counted again: the modules form one finder-like feature, not two. The
///   standard does not say how to count overlaps; this is how segno, the reference of the tests,
///   counts them.
/// - N4 = 10: each full 5 % by which the share of dark modules departs from 50 % costs 10.
enum MaskPenalty {
    /// The penalty of a square of `size` × `size` modules, row by row, true for dark.
    static func score(_ dark: [Bool], size: Int) -> Int {
        dark.withUnsafeBufferPointer { modules in
            var total = blocks(modules, size: size) + balance(modules)
            for index in 0..<size {
                let row = Line(modules: modules, first: index * size, step: 1, length: size)
                let column = Line(modules: modules, first: index, step: size, length: size)
                total += runs(row) + runs(column) + finderLike(row) + finderLike(column)
            }
            return total
        }
    }

    /// One row or column: `length` modules from `first`, `step` apart. The modules are read in
    /// place: scoring eight masks of a large symbol reads millions of them.
    struct Line {
        let modules: UnsafeBufferPointer<Bool>
        let first: Int
        let step: Int
        let length: Int

        subscript(index: Int) -> Bool { modules[first + index * step] }

        /// Beyond the ends is the quiet zone, which is light.
        func isLight(_ index: Int) -> Bool { index < 0 || index >= length || !self[index] }
    }

    /// N1: 3 + i points for each run of 5 + i modules of one colour.
    static func runs(_ line: Line) -> Int {
        var score = 0
        var runLength = 0
        for index in 0..<line.length {
            if index > 0, line[index] == line[index - 1] {
                runLength += 1
            } else {
                if runLength >= 5 { score += runLength - 2 }
                runLength = 1
            }
        }
        if runLength >= 5 { score += runLength - 2 }
        return score
    }

    /// N3: 40 points for each finder-like pattern with 4 light modules before or after it.
    static func finderLike(_ line: Line) -> Int {
        var score = 0
        var countedUpTo = 0
        for start in stride(from: 0, through: line.length - 7, by: 1) where start >= countedUpTo {
            // Spelled out rather than compared in a loop: most starts fail at the first module or two.
            guard line[start], !line[start + 1], line[start + 2], line[start + 3], line[start + 4],
                  !line[start + 5], line[start + 6] else { continue }
            if (start - 4..<start).allSatisfy(line.isLight) || (start + 7..<start + 11).allSatisfy(line.isLight) {
                score += 40
                countedUpTo = start + 7
            }
        }
        return score
    }

    /// N2: 3 points for each 2×2 block of one colour.
    static func blocks(_ modules: UnsafeBufferPointer<Bool>, size: Int) -> Int {
        var score = 0
        for y in stride(from: 0, to: size - 1, by: 1) {
            for x in 0..<(size - 1) {
                let index = y * size + x, color = modules[index]
                if modules[index + 1] == color, modules[index + size] == color, modules[index + size + 1] == color { score += 3 }
            }
        }
        return score
    }

    /// N4: 10 points for each full 5 % by which the dark share departs from 50 %. In integers:
    /// |dark / all − 1/2| in steps of 1/20 is |20·dark − 10·all| / all.
    static func balance(_ modules: UnsafeBufferPointer<Bool>) -> Int {
        guard !modules.isEmpty else { return 0 }
        let darkCount = modules.reduce(0) { $0 + ($1 ? 1 : 0) }
        return 10 * (abs(20 * darkCount - 10 * modules.count) / modules.count)
    }
}
