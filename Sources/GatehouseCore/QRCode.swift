import Foundation
import GatehouseWire

/// A QR code (ISO/IEC 18004) holding bytes, at error-correction level M (15 % of the code may be
/// lost), in the smallest of versions 1 to 20 that fits (up to 666 bytes): enough for an
/// `otpauth://` key URI, which is what Gatehouse draws. Written here because the package mirror
/// has no QR encoder; the tests read its output back with zbar.
public struct QRCode: Sendable, Equatable {
    /// 1 to 20.
    public let version: Int
    /// Modules per side: 17 + 4 × version.
    public let size: Int
    /// The data mask (0–7) with the lowest penalty, as the standard chooses it.
    public let mask: Int
    /// Row by row, `true` for dark.
    public let modules: [Bool]

    public enum Failure: Error, Equatable {
        /// More bytes than version 20 at level M holds.
        case tooLong(Int)
    }

    public static let maximumBytes = 666

    public subscript(row: Int, column: Int) -> Bool { modules[row * size + column] }

    public init(encoding bytes: [UInt8]) throws(Failure) {
        guard let version = (1...20).first(where: { Self.fits(bytes.count, version: $0) }) else { throw .tooLong(bytes.count) }
        let blocks = Self.blocks[version - 1]
        let codewords = Self.interleave(Self.dataCodewords(bytes, version: version), blocks)
        var grid = Grid(version: version)
        grid.drawFunctionPatterns()
        grid.place(codewords)
        var best: (mask: Int, penalty: Int)?
        for mask in 0..<8 {
            var candidate = grid
            candidate.apply(mask: mask)
            candidate.drawFormat(mask: mask)
            let penalty = candidate.penalty()
            if best == nil || penalty < best!.penalty { best = (mask, penalty) }
        }
        let mask = best!.mask
        grid.apply(mask: mask)
        grid.drawFormat(mask: mask)
        self.version = version
        self.size = grid.size
        self.mask = mask
        self.modules = grid.dark
    }

    public init(encoding text: String) throws(Failure) {
        try self.init(encoding: Array(text.utf8))
    }

    /// An SVG image: one path of unit squares in a `viewBox` of modules, with the standard
    /// four-module light border, drawn `pixelsPerModule` pixels per module.
    public func svg(pixelsPerModule: Int = 4) -> String {
        let border = 4
        let side = size + 2 * border
        var path = ""
        for row in 0..<size {
            for column in 0..<size where self[row, column] {
                path += "M\(column + border) \(row + border)h1v1h-1z"
            }
        }
        let pixels = side * pixelsPerModule
        return "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(pixels)\" height=\"\(pixels)\" viewBox=\"0 0 \(side) \(side)\""
            + " shape-rendering=\"crispEdges\"><rect width=\"\(side)\" height=\"\(side)\" fill=\"#fff\"/>"
            + "<path fill=\"#000\" d=\"\(path)\"/></svg>"
    }

    // MARK: Data

    /// Level M's blocks per version: error-correction codewords per block, then the two groups'
    /// block counts and data codewords per block (ISO/IEC 18004 table 9).
    struct Blocks: Sendable {
        let ecPerBlock: Int
        let groups: [(count: Int, data: Int)]
        var dataCodewords: Int { groups.reduce(0) { $0 + $1.count * $1.data } }
    }

    static let blocks: [Blocks] = [
        Blocks(ecPerBlock: 10, groups: [(1, 16)]), Blocks(ecPerBlock: 16, groups: [(1, 28)]),
        Blocks(ecPerBlock: 26, groups: [(1, 44)]), Blocks(ecPerBlock: 18, groups: [(2, 32)]),
        Blocks(ecPerBlock: 24, groups: [(2, 43)]), Blocks(ecPerBlock: 16, groups: [(4, 27)]),
        Blocks(ecPerBlock: 18, groups: [(4, 31)]), Blocks(ecPerBlock: 22, groups: [(2, 38), (2, 39)]),
        Blocks(ecPerBlock: 22, groups: [(3, 36), (2, 37)]), Blocks(ecPerBlock: 26, groups: [(4, 43), (1, 44)]),
        Blocks(ecPerBlock: 30, groups: [(1, 50), (4, 51)]), Blocks(ecPerBlock: 22, groups: [(6, 36), (2, 37)]),
        Blocks(ecPerBlock: 22, groups: [(8, 37), (1, 38)]), Blocks(ecPerBlock: 24, groups: [(4, 40), (5, 41)]),
        Blocks(ecPerBlock: 24, groups: [(5, 41), (5, 42)]), Blocks(ecPerBlock: 28, groups: [(7, 45), (3, 46)]),
        Blocks(ecPerBlock: 28, groups: [(10, 46), (1, 47)]), Blocks(ecPerBlock: 26, groups: [(9, 43), (4, 44)]),
        Blocks(ecPerBlock: 26, groups: [(3, 44), (11, 45)]), Blocks(ecPerBlock: 26, groups: [(3, 41), (13, 42)]),
    ]

    /// Byte mode's character count: 8 bits up to version 9, 16 from 10.
    static func countBits(_ version: Int) -> Int { version <= 9 ? 8 : 16 }

    static func fits(_ count: Int, version: Int) -> Bool {
        4 + countBits(version) + 8 * count <= blocks[version - 1].dataCodewords * 8
    }

    /// Mode 0100, the count, the bytes, up to four terminator bits, zeros to a byte, then the pad
    /// bytes 0xEC 0x11 in turn to the version's data capacity.
    static func dataCodewords(_ bytes: [UInt8], version: Int) -> [UInt8] {
        let capacity = blocks[version - 1].dataCodewords
        var bits: [Bool] = []
        func append(_ value: Int, _ count: Int) {
            for shift in stride(from: count - 1, through: 0, by: -1) { bits.append((value >> shift) & 1 == 1) }
        }
        append(0b0100, 4)
        append(bytes.count, countBits(version))
        for byte in bytes { append(Int(byte), 8) }
        append(0, min(4, capacity * 8 - bits.count))
        append(0, (8 - bits.count % 8) % 8)
        var codewords: [UInt8] = stride(from: 0, to: bits.count, by: 8).map { start in
            (0..<8).reduce(UInt8(0)) { $0 << 1 | (bits[start + $1] ? 1 : 0) }
        }
        var pad: UInt8 = 0xec
        while codewords.count < capacity {
            codewords.append(pad)
            pad = pad == 0xec ? 0x11 : 0xec
        }
        return codewords
    }

    /// The data split into blocks, each block's Reed–Solomon codewords, then both interleaved:
    /// the i-th data codeword of every block in turn, then the i-th error-correction codeword.
    static func interleave(_ data: [UInt8], _ layout: Blocks) -> [UInt8] {
        var blocks: [[UInt8]] = []
        var start = 0
        for group in layout.groups {
            for _ in 0..<group.count {
                blocks.append(Array(data[start..<start + group.data]))
                start += group.data
            }
        }
        let divisor = ReedSolomon.divisor(degree: layout.ecPerBlock)
        let corrections = blocks.map { ReedSolomon.remainder($0, divisor: divisor) }
        var output: [UInt8] = []
        for index in 0..<(blocks.map(\.count).max() ?? 0) {
            for block in blocks where index < block.count { output.append(block[index]) }
        }
        for index in 0..<layout.ecPerBlock {
            for correction in corrections { output.append(correction[index]) }
        }
        return output
    }

    /// Reed–Solomon over GF(2⁸) with the polynomial x⁸ + x⁴ + x³ + x² + 1 (0x11D), as QR uses it.
    enum ReedSolomon {
        static func multiply(_ a: UInt8, _ b: UInt8) -> UInt8 {
            var product: UInt16 = 0
            var x = UInt16(a)
            var y = b
            while y != 0 {
                if y & 1 == 1 { product ^= x }
                x <<= 1
                if x & 0x100 != 0 { x ^= 0x11d }
                y >>= 1
            }
            return UInt8(product)
        }

        /// The generator (x − α⁰)(x − α¹)…(x − α^(degree−1)) without its leading 1, highest
        /// power first.
        static func divisor(degree: Int) -> [UInt8] {
            var polynomial: [UInt8] = [1]
            var root: UInt8 = 1  // α⁰
            for _ in 0..<degree {
                var next = polynomial + [0]
                for (index, coefficient) in polynomial.enumerated() { next[index + 1] ^= multiply(coefficient, root) }
                polynomial = next
                root = multiply(root, 2)
            }
            return Array(polynomial.dropFirst())
        }

        static func remainder(_ data: [UInt8], divisor: [UInt8]) -> [UInt8] {
            var remainder = [UInt8](repeating: 0, count: divisor.count)
            for byte in data {
                let factor = byte ^ remainder.removeFirst()
                remainder.append(0)
                for index in divisor.indices { remainder[index] ^= multiply(divisor[index], factor) }
            }
            return remainder
        }
    }

    // MARK: The matrix

    struct Grid: Sendable {
        let version: Int
        let size: Int
        var dark: [Bool]
        /// Finder, separator, timing, alignment, format and version modules: never data, never masked.
        var reserved: [Bool]

        init(version: Int) {
            self.version = version
            size = 17 + 4 * version
            dark = Array(repeating: false, count: size * size)
            reserved = Array(repeating: false, count: size * size)
        }

        mutating func set(_ row: Int, _ column: Int, _ value: Bool) {
            dark[row * size + column] = value
            reserved[row * size + column] = true
        }

        /// Alignment pattern centres per version (ISO/IEC 18004 annex E), 2 to 20.
        static let alignment: [[Int]] = [
            [], [6, 18], [6, 22], [6, 26], [6, 30], [6, 34], [6, 22, 38], [6, 24, 42], [6, 26, 46], [6, 28, 50],
            [6, 30, 54], [6, 32, 58], [6, 34, 62], [6, 26, 46, 66], [6, 26, 48, 70], [6, 26, 50, 74], [6, 30, 54, 78],
            [6, 30, 56, 82], [6, 30, 58, 86], [6, 34, 62, 90],
        ]

        mutating func drawFunctionPatterns() {
            for index in 0..<size {
                set(6, index, index % 2 == 0)
                set(index, 6, index % 2 == 0)
            }
            for (row, column) in [(0, 0), (0, size - 7), (size - 7, 0)] { drawFinder(row, column) }
            let centres = Self.alignment[version - 1]
            for row in centres {
                for column in centres {
                    let last = centres.count - 1
                    let nearFinder = (row == 6 && column == 6) || (row == 6 && column == centres[last]) || (row == centres[last] && column == 6)
                    if !nearFinder { drawAlignment(row, column) }
                }
            }
            drawFormat(mask: 0)  // reserves the format modules; drawn again once the mask is chosen
            drawVersion()
        }

        /// A finder pattern with its light separator, clipped at the edges.
        mutating func drawFinder(_ top: Int, _ left: Int) {
            for dy in -1...7 {
                for dx in -1...7 {
                    let row = top + dy
                    let column = left + dx
                    guard (0..<size).contains(row), (0..<size).contains(column) else { continue }
                    let distance = max(abs(dx - 3), abs(dy - 3))
                    set(row, column, distance != 2 && distance != 4)
                }
            }
        }

        mutating func drawAlignment(_ row: Int, _ column: Int) {
            for dy in -2...2 {
                for dx in -2...2 { set(row + dy, column + dx, max(abs(dx), abs(dy)) != 1) }
            }
        }

        /// Level M (00) and the mask, BCH(15, 5) protected, XOR 101010000010010; two copies and
        /// the one always-dark module.
        mutating func drawFormat(mask: Int) {
            let data = (0b00 << 3) | mask
            var remainder = data
            for _ in 0..<10 { remainder = (remainder << 1) ^ ((remainder >> 9) * 0x537) }
            let bits = ((data << 10) | remainder) ^ 0x5412
            func bit(_ index: Int) -> Bool { (bits >> index) & 1 == 1 }
            for index in 0...5 { set(index, 8, bit(index)) }
            set(7, 8, bit(6))
            set(8, 8, bit(7))
            set(8, 7, bit(8))
            for index in 9..<15 { set(8, 14 - index, bit(index)) }
            for index in 0..<8 { set(8, size - 1 - index, bit(index)) }
            for index in 8..<15 { set(size - 15 + index, 8, bit(index)) }
            set(size - 8, 8, true)
        }

        /// From version 7: the version, BCH(18, 6) protected, in two 6 × 3 blocks.
        mutating func drawVersion() {
            guard version >= 7 else { return }
            var remainder = version
            for _ in 0..<12 { remainder = (remainder << 1) ^ ((remainder >> 11) * 0x1f25) }
            let bits = (version << 12) | remainder
            for index in 0..<18 {
                let value = (bits >> index) & 1 == 1
                let near = index / 3
                let far = size - 11 + index % 3
                set(near, far, value)
                set(far, near, value)
            }
        }

        /// The codewords' bits, most significant first, in two-column zigzags from the bottom
        /// right, up then down, skipping the vertical timing column and reserved modules.
        mutating func place(_ codewords: [UInt8]) {
            var index = 0
            let total = codewords.count * 8
            var right = size - 1
            while right >= 1 {
                if right == 6 { right = 5 }
                let upward = Self.isUpward(right, size: size)
                for step in 0..<size {
                    for offset in 0..<2 {
                        let column = right - offset
                        let row = upward ? size - 1 - step : step
                        guard !reserved[row * size + column] else { continue }
                        if index < total {
                            dark[row * size + column] = (codewords[index / 8] >> (7 - index % 8)) & 1 == 1
                            index += 1
                        }
                    }
                }
                right -= 2
            }
        }

        /// Whether the column pair whose right column is `right` is filled bottom to top: the
        /// first pair (at the right edge) goes up, then they alternate; the pair left of the
        /// timing column continues the alternation as if that column were not there.
        static func isUpward(_ right: Int, size: Int) -> Bool {
            let pair = right > 6 ? (size - 1 - right) / 2 : (size - 2 - right) / 2
            return pair % 2 == 0
        }

        static func masked(_ mask: Int, _ row: Int, _ column: Int) -> Bool {
            switch mask {
            case 0: (row + column) % 2 == 0
            case 1: row % 2 == 0
            case 2: column % 3 == 0
            case 3: (row + column) % 3 == 0
            case 4: (row / 2 + column / 3) % 2 == 0
            case 5: (row * column) % 2 + (row * column) % 3 == 0
            case 6: ((row * column) % 2 + (row * column) % 3) % 2 == 0
            default: ((row + column) % 2 + (row * column) % 3) % 2 == 0
            }
        }

        mutating func apply(mask: Int) {
            for row in 0..<size {
                for column in 0..<size where !reserved[row * size + column] && Self.masked(mask, row, column) {
                    dark[row * size + column].toggle()
                }
            }
        }

        /// The standard's four penalties: runs of five or more, 2 × 2 blocks, finder-like
        /// 1:1:3:1:1 patterns with four light modules beside, and dark share away from half.
        func penalty() -> Int {
            var score = 0
            let finderLike: [[Bool]] = [
                [true, false, true, true, true, false, true, false, false, false, false],
                [false, false, false, false, true, false, true, true, true, false, true],
            ]
            for horizontal in [true, false] {
                for line in 0..<size {
                    let values = (0..<size).map { horizontal ? dark[line * size + $0] : dark[$0 * size + line] }
                    var run = 1
                    for index in 1..<size {
                        if values[index] == values[index - 1] {
                            run += 1
                        } else {
                            if run >= 5 { score += 3 + run - 5 }
                            run = 1
                        }
                    }
                    if run >= 5 { score += 3 + run - 5 }
                    for start in 0...(size - 11) {
                        let window = Array(values[start..<start + 11])
                        if finderLike.contains(window) { score += 40 }
                    }
                }
            }
            for row in 0..<(size - 1) {
                for column in 0..<(size - 1) {
                    let value = dark[row * size + column]
                    if dark[row * size + column + 1] == value, dark[(row + 1) * size + column] == value,
                        dark[(row + 1) * size + column + 1] == value
                    {
                        score += 3
                    }
                }
            }
            let darkCount = dark.reduce(0) { $0 + ($1 ? 1 : 0) }
            let percent = darkCount * 100 / (size * size)
            score += 10 * (abs(percent - 50) / 5)
            return score
        }
    }
}
