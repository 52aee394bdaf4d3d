/// The codewords a symbol carries, in the order they are placed: the data in byte mode, padded to
/// the version's capacity, split into blocks, each block followed by its Reed–Solomon codewords,
/// and the blocks interleaved (ISO/IEC 18004:2015 §7.4–§7.6).
enum CodewordSequence {
    /// Bits the byte-mode header takes before the data: the mode indicator 0100 (§7.4.2, Table 2)
    /// and the character count.
    static func headerBits(_ version: SymbolVersion) -> Int { 4 + version.byteCountBits }

    /// The most bytes byte mode fits in `version` at `level`.
    static func byteCapacity(_ version: SymbolVersion, _ level: QRCode.ErrorCorrection) -> Int {
        (version.blocks(level).dataCodewordCount * 8 - headerBits(version)) / 8
    }

    /// The data codewords (§7.4.2 byte mode, §7.4.9 terminator and padding). The caller has
    /// checked that `bytes` fit.
    static func dataCodewords(_ bytes: [UInt8], _ version: SymbolVersion, _ level: QRCode.ErrorCorrection) -> [UInt8] {
        let capacityBits = version.blocks(level).dataCodewordCount * 8
        var bits = BitBuffer()
        bits.append(0b0100, count: 4)
        bits.append(bytes.count, count: version.byteCountBits)
        for byte in bytes { bits.append(Int(byte), count: 8) }
        // The terminator is four 0 bits, or fewer when the capacity ends first; then 0 bits up to
        // a codeword boundary.
        bits.append(0, count: min(4, capacityBits - bits.count))
        bits.append(0, count: (8 - bits.count % 8) % 8)
        var codewords = bits.bytes
        // Pad codewords alternate 11101100 and 00010001 until the capacity is full.
        let padding: [UInt8] = [0xEC, 0x11]
        var next = 0
        while codewords.count * 8 < capacityBits {
            codewords.append(padding[next])
            next ^= 1
        }
        return codewords
    }

    /// The final message (§7.6): the data codewords split into blocks in order, then data
    /// codeword i of every block in turn, then error correction codeword i of every block in
    /// turn. Blocks that are one data codeword short are skipped at the last data position.
    static func interleaved(_ data: [UInt8], _ blocks: BlockStructure) -> [UInt8] {
        var dataBlocks: [ArraySlice<UInt8>] = []
        var start = 0
        for index in 0..<blocks.blockCount {
            let end = start + blocks.dataCount(ofBlock: index)
            dataBlocks.append(data[start..<end])
            start = end
        }
        let correctionBlocks = dataBlocks.map {
            ReedSolomon.errorCorrectionCodewords(for: Array($0), count: blocks.errorCorrectionPerBlock)
        }
        var message: [UInt8] = []
        message.reserveCapacity(data.count + blocks.blockCount * blocks.errorCorrectionPerBlock)
        for position in 0...blocks.shortBlockDataCount {
            for block in dataBlocks where position < block.count {
                message.append(block[block.startIndex + position])
            }
        }
        for position in 0..<blocks.errorCorrectionPerBlock {
            for block in correctionBlocks { message.append(block[position]) }
        }
        return message
    }
}

/// Bits appended most significant first, read back as bytes.
struct BitBuffer {
    private(set) var bytes: [UInt8] = []
    private(set) var count = 0

    mutating func append(_ value: Int, count width: Int) {
        for shift in stride(from: width - 1, through: 0, by: -1) {
            if count % 8 == 0 { bytes.append(0) }
            if (value >> shift) & 1 == 1 { bytes[count / 8] |= 0x80 >> UInt8(count % 8) }
            count += 1
        }
    }
}
