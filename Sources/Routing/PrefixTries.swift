/// The path prefixes of each of a route table's host groups, as one compressed trie (a radix
/// tree) per group, all in shared flat arrays: the longest prefix of a path is found in one walk
/// down the path's bytes, whatever the number of prefixes, with no allocation.
///
/// A node holds a label (bytes of the path), the value of the prefix that ends after it, if
/// any, and its children, sorted by their label's first byte, which is the byte that chooses
/// them. A root's label is what all its group's prefixes share. With `/a/` and `/api/` a root
/// `/a`, without value, has the children `/` (value) and `pi/` (value).
///
/// Compared with a scan of the group's prefixes, longest first (what the table did before):
/// the same answers, and with 4,000 prefixes on one host the last of them costs a dozen node
/// steps instead of 4,000 comparisons (bench/config-scale.sh).
struct PrefixTries: Sendable {
    private struct Node: Sendable {
        var labelStart: Int32
        var labelCount: Int32
        /// The value of the prefix that ends after this node's label; -1 when none does.
        var value: Int32
        /// This node's children: `children[firstChild ..< firstChild + childCount]`.
        var firstChild: Int32
        var childCount: Int32
    }

    private var nodes: [Node] = []
    private var labels: [UInt8] = []
    /// Node indices, each node's children together and sorted by their first label byte.
    private var children: [Int32] = []
    /// The first label byte of the node in the same place of `children`.
    private var childBytes: [UInt8] = []
    /// Each group's root node.
    private var roots: [Int32] = []

    /// `groups[g]`: group g's prefixes and their values. Where two prefixes of a group are equal,
    /// the first keeps its value.
    init(_ groups: [[(prefix: [UInt8], value: Int)]]) {
        for group in groups {
            // Sorted by bytes, equal prefixes in their given order: the first of them is kept.
            let sorted = group.enumerated().sorted { a, b in
                a.element.prefix.lexicographicallyPrecedes(b.element.prefix)
                    || (a.element.prefix == b.element.prefix && a.offset < b.offset)
            }.map(\.element)
            var distinct: [(prefix: [UInt8], value: Int)] = []
            for entry in sorted where distinct.last?.prefix != entry.prefix { distinct.append(entry) }
            roots.append(addTree(distinct))
        }
    }

    /// The nodes for `entries` (sorted, distinct); the root's index, or -1 when there are none.
    /// Built with a list of nodes still to fill rather than by recursion: a chain of prefixes
    /// each one byte longer than the last (`/a`, `/aa`, …) is a chain of nodes as deep.
    private mutating func addTree(_ entries: [(prefix: [UInt8], value: Int)]) -> Int32 {
        guard !entries.isEmpty else { return -1 }
        let root = appendNode()
        // Each: entries that all share their first `depth` bytes, and the node made for them
        // (below a root, `depth` is where the byte that chose the node is).
        var toFill = [(entries: 0..<entries.count, depth: 0, node: root)]
        while let (range, depth, node) = toFill.popLast() {
            // Sorted: what the first and the last share, all share.
            let first = entries[range.lowerBound].prefix, last = entries[range.upperBound - 1].prefix
            var end = depth
            while end < first.count && end < last.count && first[end] == last[end] { end += 1 }
            nodes[node].labelStart = Int32(labels.count)
            nodes[node].labelCount = Int32(end - depth)
            labels.append(contentsOf: first[depth..<end])
            var next = range.lowerBound
            // Sorted: a prefix that ends here comes first.
            if first.count == end {
                nodes[node].value = Int32(entries[next].value)
                next += 1
            }
            // One child per next byte, its index placed beside its siblings' now.
            nodes[node].firstChild = Int32(children.count)
            while next < range.upperBound {
                let byte = entries[next].prefix[end]
                var stop = next + 1
                while stop < range.upperBound && entries[stop].prefix[end] == byte { stop += 1 }
                let child = appendNode()
                children.append(Int32(child))
                childBytes.append(byte)
                toFill.append((next..<stop, end, child))
                next = stop
            }
            nodes[node].childCount = Int32(children.count) - nodes[node].firstChild
        }
        return Int32(root)
    }

    private mutating func appendNode() -> Int {
        nodes.append(Node(labelStart: 0, labelCount: 0, value: -1, firstChild: 0, childCount: 0))
        return nodes.count - 1
    }

    /// The value of the longest of group `group`'s prefixes that `path` starts with, or nil.
    func longestPrefix(in group: Int, of path: UnsafeRawBufferPointer) -> Int? {
        var node = Int(roots[group])
        guard node >= 0 else { return nil }
        var position = 0
        var found: Int32 = -1
        return nodes.withUnsafeBufferPointer { nodes in
            labels.withUnsafeBufferPointer { labels in
                while true {
                    let current = nodes[node]
                    let labelCount = Int(current.labelCount)
                    guard labelCount <= path.count - position else { break }
                    let labelStart = Int(current.labelStart)
                    var offset = 0
                    while offset < labelCount && path[position + offset] == labels[labelStart + offset] { offset += 1 }
                    guard offset == labelCount else { break }
                    position += labelCount
                    if current.value >= 0 { found = current.value }
                    guard position < path.count, let child = child(of: current, byte: path[position]) else { break }
                    node = child
                }
                return found >= 0 ? Int(found) : nil
            }
        }
    }

    /// The child of `node` whose label starts with `byte`: a binary search of its sorted children.
    private func child(of node: Node, byte: UInt8) -> Int? {
        var low = Int(node.firstChild), high = low + Int(node.childCount)
        while low < high {
            let middle = (low + high) / 2
            let candidate = childBytes[middle]
            if candidate == byte { return Int(children[middle]) }
            if candidate < byte { low = middle + 1 } else { high = middle }
        }
        return nil
    }
}
