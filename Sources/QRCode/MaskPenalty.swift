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
    static func score(_ grid: ModuleGrid) -> Int {
        let size = grid.size
        return grid.dark.withUnsafeBufferPointer { modules in
            var total = 0
            for line in 0..<size {
                total += lineScore(modules, first: line * size, step: 1, length: size)
                total += lineScore(modules, first: line, step: size, length: size)
            }
            for y in 0..<(size - 1) {
                for x in 0..<(size - 1) {
                    let index = y * size + x, color = modules[index]
                    if modules[index + 1] == color, modules[index + size] == color, modules[index + size + 1] == color { total += 3 }
                }
            }
            let darkCount = modules.reduce(0) { $0 + ($1 ? 1 : 0) }
            let moduleCount = size * size
            // |dark / all − 1/2| in whole steps of 5 %, in integers: |20·dark − 10·all| / all.
            total += 10 * (abs(20 * darkCount - 10 * moduleCount) / moduleCount)
            return total
        }
    }

    /// N1 and N3 for one row or column: `length` modules from `first`, `step` apart.
    private static func lineScore(_ modules: UnsafeBufferPointer<Bool>, first: Int, step: Int, length: Int) -> Int {
        func module(_ index: Int) -> Bool { modules[first + index * step] }
        var score = 0
        var runLength = 1
        for index in 1..<length {
            if module(index) == module(index - 1) {
                runLength += 1
            } else {
                if runLength >= 5 { score += runLength - 2 }
                runLength = 1
            }
        }
        if runLength >= 5 { score += runLength - 2 }

        func isLight(_ index: Int) -> Bool { index < 0 || index >= length || !module(index) }
        var countedUpTo = 0
        for start in 0...(length - 7) where start >= countedUpTo {
            // Spelled out rather than compared in a loop: most starts fail at the first module or two.
            guard module(start), !module(start + 1), module(start + 2), module(start + 3), module(start + 4),
                  !module(start + 5), module(start + 6) else { continue }
            if (start - 4..<start).allSatisfy(isLight) || (start + 7..<start + 11).allSatisfy(isLight) {
                score += 40
                countedUpTo = start + 7
            }
        }
        return score
    }
}
