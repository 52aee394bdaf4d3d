import Routing
import XCTest

/// The route table against the precedence rule written out as a scan of every route (CONFIG.md:
/// exact host over the longest wildcard suffix over no host, then the longest `pathPrefix`,
/// then file order), on random tables and requests from a fixed seed, so a failure repeats.
/// Hosts and prefixes come from small alphabets, so that they collide, nest and repeat.
final class RouteTableReferenceTests: XCTestCase {
    func testSmallRandomTablesAnswerAsTheReference() {
        var random = SeededRandom(seed: 25)
        for _ in 0..<300 {
            let matches = (0..<random.below(40)).map { _ in randomMatch(&random) }
            assertSameAnswers(matches, requests: 60, labelCount: 6, &random)
        }
    }

    func testTenThousandRoutesAnswerAsTheReference() {
        var random = SeededRandom(seed: 10_000)
        let matches = (0..<10_000).map { _ in randomMatch(&random, labelCount: 40, prefixLength: 9) }
        assertSameAnswers(matches, requests: 500, labelCount: 40, &random)
    }

    func testChainsOfNestedPrefixesAnswerAsTheReference() {
        // `/`, `/a`, `/aa`, … each one byte longer: as deep a trie as there are routes.
        let matches = (0..<2000).map { RouteMatch(pathPrefix: "/" + String(repeating: "a", count: $0)) }
        let table = RouteTable(matches)
        for length in [0, 1, 2, 999, 1998, 1999, 2500] {
            let path = "/" + String(repeating: "a", count: length)
            XCTAssertEqual(table.matchIndex(host: "h", path: path), min(length, 1999), "path of \(length + 1) bytes")
        }
        XCTAssertEqual(table.matchIndex(host: "h", path: "/aab"), 2)
    }

    private func assertSameAnswers(_ matches: [RouteMatch], requests: Int, labelCount: Int, _ random: inout SeededRandom,
                                   file: StaticString = #filePath, line: UInt = #line) {
        let table = RouteTable(matches)
        let reference = Reference(matches)
        for _ in 0..<requests {
            let (host, path) = randomRequest(&random, labelCount: labelCount)
            for namingHost in [false, true] {
                let expected = reference.matchIndex(host: host, path: path, namingHost: namingHost)
                let answered = table.matchIndex(host: host, path: path, namingHost: namingHost)
                guard answered == expected else {
                    return XCTFail("\(matches.count) routes, Host \"\(host)\", path \"\(path)\", namingHost \(namingHost): "
                                   + "\(answered.map(String.init) ?? "nil") instead of \(expected.map(String.init) ?? "nil")",
                                   file: file, line: line)
                }
            }
        }
    }

    /// The rule as a scan: every matching route ranked, the best one's position.
    private struct Reference {
        let matches: [RouteMatch]
        let prefixes: [[UInt8]]

        init(_ matches: [RouteMatch]) {
            self.matches = matches
            prefixes = matches.map { Array($0.pathPrefix.utf8) }
        }

        func matchIndex(host: String, path: String, namingHost: Bool) -> Int? {
            var name = Substring(host.lowercased())
            if let colon = name.firstIndex(of: ":") { name = name[..<colon] }
            if name.count > 1 && name.hasSuffix(".") { name = name.dropLast() }
            let pathBytes = Array(path.utf8)
            // Smaller is better: host kind (exact, wildcard, none), then a longer suffix, then a
            // longer prefix, then file order.
            var best: (rank: [Int], position: Int)?
            for (position, match) in matches.enumerated() where pathBytes.starts(with: prefixes[position]) {
                let hostRank: [Int]
                switch match.host {
                case .exact(let exact)?:
                    guard !name.isEmpty, name == exact else { continue }
                    hostRank = [0, 0]
                case .wildcard(let suffix)?:
                    guard !name.isEmpty, name.hasSuffix("." + suffix) else { continue }
                    hostRank = [1, -suffix.utf8.count]
                case nil:
                    guard !namingHost else { continue }
                    hostRank = [2, 0]
                }
                let rank = hostRank + [-prefixes[position].count, position]
                if best.map({ rank.lexicographicallyPrecedes($0.rank) }) ?? true { best = (rank, position) }
            }
            return best?.position
        }
    }

    private static let labels = ["a", "b", "api", "x1", "svc", "ab"]

    private func randomName(_ random: inout SeededRandom, labelCount: Int) -> String {
        let count = 1 + random.below(3)
        return (0..<count).map { _ in
            random.below(4) == 0 ? "n\(random.below(labelCount))" : Self.labels[random.below(Self.labels.count)]
        }.joined(separator: ".") + ".test"
    }

    private func randomPath(_ random: inout SeededRandom, length: Int) -> String {
        "/" + String((0..<random.below(length + 1)).map { _ in Array("ab/c")[random.below(4)] })
    }

    private func randomMatch(_ random: inout SeededRandom, labelCount: Int = 6, prefixLength: Int = 5) -> RouteMatch {
        let host: HostPattern? = switch random.below(3) {
        case 0: nil
        case 1: .exact(randomName(&random, labelCount: labelCount))
        default: .wildcard(suffix: randomName(&random, labelCount: labelCount))
        }
        return RouteMatch(host: host, pathPrefix: random.below(8) == 0 ? "" : randomPath(&random, length: prefixLength))
    }

    private func randomRequest(_ random: inout SeededRandom, labelCount: Int) -> (host: String, path: String) {
        var host = random.below(10) == 0 ? "" : randomName(&random, labelCount: labelCount)
        if random.below(4) == 0 { host = host.uppercased() }
        if random.below(4) == 0 { host += "." }
        if random.below(4) == 0 { host += ":8180" }
        return (host, randomPath(&random, length: 10))
    }
}

/// SplitMix64 from a fixed seed.
private struct SeededRandom {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    /// Uniform in 0..<bound.
    mutating func below(_ bound: Int) -> Int {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return Int((z ^ (z >> 31)) % UInt64(bound))
    }
}
