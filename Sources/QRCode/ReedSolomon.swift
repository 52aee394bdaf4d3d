/// Reed–Solomon error correction codewords as QR Code computes them (ISO/IEC 18004:2015 §7.5.2).
///
/// Codewords are elements of GF(2⁸) built on the primitive polynomial x⁸ + x⁴ + x³ + x² + 1
/// (0x11D), whose root α = 2 generates every non-zero element. The generator polynomial for n
/// error correction codewords is g(x) = (x − α⁰)(x − α¹)…(x − αⁿ⁻¹) (Annex A lists them); the
/// error correction codewords of a block are the remainder of data(x)·xⁿ divided by g(x).
/// In characteristic 2, subtraction is addition is XOR.
enum ReedSolomon {
    /// The reduction the field's multiplication performs when a product overflows 8 bits:
    /// x⁸ = x⁴ + x³ + x² + 1, the low byte of 0x11D.
    private static let primitiveReduction: UInt8 = 0x1D

    /// αⁱ for i in 0..<255, and the discrete logarithm of each non-zero element: with them a
    /// product is one addition of logarithms instead of eight shift-and-XOR steps.
    private static let (powers, logarithms): ([UInt8], [UInt8]) = {
        var powers = [UInt8](repeating: 0, count: 255)
        var logarithms = [UInt8](repeating: 0, count: 256)
        var element: UInt8 = 1
        for exponent in 0..<255 {
            powers[exponent] = element
            logarithms[Int(element)] = UInt8(exponent)
            let overflows = element & 0x80 != 0
            element <<= 1
            if overflows { element ^= primitiveReduction }
        }
        return (powers, logarithms)
    }()

    /// The product of two field elements.
    static func multiply(_ a: UInt8, _ b: UInt8) -> UInt8 {
        guard a != 0, b != 0 else { return 0 }
        return powers[(Int(logarithms[Int(a)]) + Int(logarithms[Int(b)])) % 255]
    }

    /// αᵉ.
    static func power(_ exponent: Int) -> UInt8 { powers[exponent % 255] }

    /// The coefficients of g(x) for `degree` error correction codewords, highest power first; the
    /// leading coefficient is always 1.
    static func generatorPolynomial(degree: Int) -> [UInt8] {
        var coefficients: [UInt8] = [1]
        for exponent in 0..<degree {
            // Multiply by (x + αᵉ): shift every term up one power, then add αᵉ times the old terms.
            let root = power(exponent)
            var product = coefficients + [0]
            for (index, coefficient) in coefficients.enumerated() {
                product[index + 1] ^= multiply(coefficient, root)
            }
            coefficients = product
        }
        return coefficients
    }

    /// The `count` error correction codewords of one block of data codewords: the remainder of
    /// data(x)·xᶜᵒᵘⁿᵗ modulo g(x), by the long division a shift register performs.
    static func errorCorrectionCodewords(for data: [UInt8], count: Int) -> [UInt8] {
        let generator = generatorPolynomial(degree: count)
        var remainder = [UInt8](repeating: 0, count: count)
        for codeword in data {
            let factor = codeword ^ remainder[0]
            remainder.removeFirst()
            remainder.append(0)
            for index in 0..<count {
                remainder[index] ^= multiply(generator[index + 1], factor)
            }
        }
        return remainder
    }
}
