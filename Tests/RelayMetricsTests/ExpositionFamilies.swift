import XCTest

/// The lines of family `name` in exposition `text`, as bytes: its `# HELP` and `# TYPE`, then each
/// series' lines in the order written, the series sorted by their labels (swift-prometheus writes
/// a family's series in its dictionary's order, which changes from run to run; the lines of one
/// series it writes together). Empty when the family has no lines. Fails the test when the
/// family's lines are not one run of consecutive lines opened by exactly one HELP and one TYPE.
func familyLines(_ name: String, in text: [UInt8], file: StaticString = #filePath, line: UInt = #line) -> [[UInt8]] {
    XCTAssertTrue(text.isEmpty || text.last == UInt8(ascii: "\n"), "the exposition does not end with a line feed", file: file, line: line)
    let lines = text.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).dropLast().map(Array.init)
    let sampleNames = Set([name, name + "_bucket", name + "_sum", name + "_count"].map { Array($0.utf8) })
    let headers = [Array("# HELP \(name) ".utf8), Array("# TYPE \(name) ".utf8)]
    let member = lines.indices.filter { index in
        let line = lines[index]
        if headers.contains(where: { line.starts(with: $0) }) { return true }
        return sampleNames.contains(Array(line.prefix { $0 != UInt8(ascii: "{") && $0 != UInt8(ascii: " ") }))
    }
    guard let first = member.first, let last = member.last else { return [] }
    XCTAssertEqual(last - first + 1, member.count, "\(name)'s lines are not together", file: file, line: line)
    XCTAssertTrue(member.count >= 2 && lines[first].starts(with: headers[0]) && lines[first + 1].starts(with: headers[1]),
                  "\(name) does not open with one HELP and one TYPE", file: file, line: line)
    XCTAssertEqual(member.filter { lines[$0].first == UInt8(ascii: "#") }.count, 2, "\(name) has more than one HELP or TYPE",
                   file: file, line: line)
    var seriesOrder: [[UInt8]] = []
    var seriesLines: [[UInt8]: [[UInt8]]] = [:]
    for index in member where lines[index].first != UInt8(ascii: "#") {
        let key = seriesKey(lines[index])
        if seriesLines[key] == nil { seriesOrder.append(key) }
        seriesLines[key, default: []].append(lines[index])
    }
    let sorted = seriesOrder.sorted { $0.lexicographicallyPrecedes($1) }
    return [lines[first], lines[first + 1]] + sorted.flatMap { seriesLines[$0]! }
}

/// A sample line's labels without `le` (the bytes between the braces, up to `,le=`).
private func seriesKey(_ line: [UInt8]) -> [UInt8] {
    guard let open = line.firstIndex(of: UInt8(ascii: "{")) else { return [] }
    let labels = Array(line[(open + 1)...].prefix { $0 != UInt8(ascii: "}") })
    let le = Array(#",le=""#.utf8)
    var index = 0
    while index + le.count <= labels.count {
        if Array(labels[index..<(index + le.count)]) == le { return Array(labels[..<index]) }
        index += 1
    }
    return labels
}

/// Fails unless the two families' lines are byte for byte the same, naming the first difference.
func assertSameLines(_ ours: [[UInt8]], _ reference: [[UInt8]], _ name: String, file: StaticString = #filePath, line: UInt = #line) {
    guard ours != reference else { return }
    let differing = zip(ours, reference).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(ours.count, reference.count)
    func show(_ lines: [[UInt8]]) -> String {
        differing < lines.count ? String(decoding: lines[differing], as: UTF8.self) : "(no line)"
    }
    XCTFail("\(name): \(ours.count) lines against \(reference.count); line \(differing) is\n  ours:      \(show(ours))\n"
                + "  reference: \(show(reference))", file: file, line: line)
}
