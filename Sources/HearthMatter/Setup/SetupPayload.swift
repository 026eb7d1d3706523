// What a person types or scans to pair (core specification 5.1): the QR code payload (`MT:` and base38) and the
// manual pairing code (decimal, with a Verhoeff check digit), both ways, and the passcode and discriminator a node
// makes for itself.

public import HearthCrypto

/// What is wrong with a setup code or a setup payload.
public enum SetupPayloadError: Error, Sendable, Equatable {
    /// The QR text does not start with `MT:`.
    case missingPrefix
    /// A character outside the base38 alphabet, at this offset in the base38 text.
    case invalidBase38Character(offset: Int)
    /// A base38 chunk whose value does not fit its bytes, or a base38 text of a length no bytes encode.
    case invalidBase38Chunk(offset: Int)
    /// The QR payload is shorter than its 88 bits.
    case payloadTooShort
    /// A version other than 0.
    case unsupportedVersion(UInt8)
    /// The manual code has a length other than 11 or 21 digits, or one that does not match its own first digit.
    case invalidLength(Int)
    /// A character that is not a decimal digit, at this offset.
    case invalidDigit(offset: Int)
    /// The check digit does not match.
    case checkDigitMismatch
    /// The passcode is not one the specification allows (0, over 99999998, or one of the trivial ones).
    case invalidPasscode(UInt32)
    /// The discriminator does not fit 12 bits.
    case invalidDiscriminator(UInt16)
}

/// How a commissioner starts commissioning (5.1.3): the standard flow, after a user action, or custom.
public enum CommissioningFlow: UInt8, Sendable {
    case standard = 0
    case userActionRequired = 1
    case custom = 2
}

/// The rendezvous (discovery) capabilities a QR code announces.
public struct DiscoveryCapabilities: OptionSet, Sendable, Hashable {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public static let softAP = DiscoveryCapabilities(rawValue: 1 << 0)
    public static let ble = DiscoveryCapabilities(rawValue: 1 << 1)
    public static let onNetwork = DiscoveryCapabilities(rawValue: 1 << 2)
    public static let wifiPAF = DiscoveryCapabilities(rawValue: 1 << 3)
    public static let nfc = DiscoveryCapabilities(rawValue: 1 << 4)
}

/// The setup passcode: 27 bits, in 1…99999998, none of the trivial values.
public enum SetupPasscode {
    public static let validRange: ClosedRange<UInt32> = 1...99_999_998
    /// The values the specification forbids because they are easy to guess.
    public static let forbidden: Set<UInt32> = [
        0, 11_111_111, 22_222_222, 33_333_333, 44_444_444, 55_555_555, 66_666_666, 77_777_777, 88_888_888,
        99_999_999, 12_345_678, 87_654_321,
    ]

    public static func isValid(_ passcode: UInt32) -> Bool {
        validRange.contains(passcode) && !forbidden.contains(passcode)
    }

    /// A random valid passcode from libcrypto's generator.
    public static func random() throws(CryptoError) -> UInt32 {
        try random(from: SecureRandom.bytes)
    }

    /// A random valid passcode. `randomBytes` is the secure random source (HearthCrypto's `SecureRandom.bytes`);
    /// tests pass a deterministic one.
    public static func random<E: Error>(from randomBytes: (Int) throws(E) -> [UInt8]) throws(E) -> UInt32 {
        while true {
            let bytes = try randomBytes(4)
            guard bytes.count == 4 else { continue }
            let value = bytes.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            // Rejection sampling over 27 bits: uniform over the valid values, no modulo bias.
            let candidate = value & ((1 << 27) - 1)
            if isValid(candidate) { return candidate }
        }
    }
}

/// The discriminator: 12 bits that tell commissionable nodes apart before a passcode is tried.
public enum SetupDiscriminator {
    public static let maximum: UInt16 = 0xFFF

    /// A random 12-bit discriminator from libcrypto's generator.
    public static func random() throws(CryptoError) -> UInt16 {
        try random(from: SecureRandom.bytes)
    }

    /// A random 12-bit discriminator. `randomBytes` is the secure random source (HearthCrypto's
    /// `SecureRandom.bytes`).
    public static func random<E: Error>(from randomBytes: (Int) throws(E) -> [UInt8]) throws(E) -> UInt16 {
        let bytes = try randomBytes(2)
        return bytes.reduce(UInt16(0)) { $0 << 8 | UInt16($1) } & maximum
    }
}

/// The onboarding payload of a commissionable node.
public struct SetupPayload: Sendable, Equatable {
    public var version: UInt8
    public var vendorID: UInt16
    public var productID: UInt16
    public var commissioningFlow: CommissioningFlow
    public var discoveryCapabilities: DiscoveryCapabilities
    /// The full 12-bit discriminator (a manual code carries only its top 4 bits).
    public var discriminator: UInt16
    public var passcode: UInt32

    public init(
        version: UInt8 = 0, vendorID: UInt16, productID: UInt16, commissioningFlow: CommissioningFlow = .standard,
        discoveryCapabilities: DiscoveryCapabilities = .onNetwork, discriminator: UInt16, passcode: UInt32
    ) {
        self.version = version
        self.vendorID = vendorID
        self.productID = productID
        self.commissioningFlow = commissioningFlow
        self.discoveryCapabilities = discoveryCapabilities
        self.discriminator = discriminator
        self.passcode = passcode
    }

    /// The 4-bit short discriminator a manual code and the `_S` DNS-SD subtype carry.
    public var shortDiscriminator: UInt8 { UInt8(discriminator >> 8) & 0x0F }

    // MARK: QR code

    /// The QR code's text: `MT:` and the base38 of the 88-bit payload (no optional TLV data).
    public var qrCode: String {
        var bits = BitWriter()
        bits.write(UInt64(version), bits: 3)
        bits.write(UInt64(vendorID), bits: 16)
        bits.write(UInt64(productID), bits: 16)
        bits.write(UInt64(commissioningFlow.rawValue), bits: 2)
        bits.write(UInt64(discoveryCapabilities.rawValue), bits: 8)
        bits.write(UInt64(discriminator & Self.discriminatorMask), bits: 12)
        bits.write(UInt64(passcode & Self.passcodeMask), bits: 27)
        bits.write(0, bits: 4)
        return "MT:" + Base38.encode(bits.bytes)
    }

    static let discriminatorMask: UInt16 = 0xFFF
    static let passcodeMask: UInt32 = (1 << 27) - 1

    /// Reads a QR code's text. Optional TLV data after the 88 bits is skipped.
    public init(qrCode text: String) throws(SetupPayloadError) {
        let chars = Array(text.utf8)
        guard chars.count >= 3, chars[0] == UInt8(ascii: "M"), chars[1] == UInt8(ascii: "T"),
            chars[2] == UInt8(ascii: ":")
        else { throw .missingPrefix }
        // A QR code may hold several payloads joined by '*'; the first is this node's.
        let body = chars[3...].split(separator: UInt8(ascii: "*"), omittingEmptySubsequences: false).first ?? []
        let bytes = try Base38.decode(Array(body))
        guard bytes.count >= 11 else { throw .payloadTooShort }
        var reader = BitReader(bytes)
        let version = UInt8(reader.read(bits: 3))
        if version != 0 { throw .unsupportedVersion(version) }
        let vendor = UInt16(reader.read(bits: 16)), product = UInt16(reader.read(bits: 16))
        // Flow 3 is reserved; a reader takes it as custom rather than refusing a code a device prints.
        let flow = CommissioningFlow(rawValue: UInt8(reader.read(bits: 2))) ?? .custom
        let capabilities = DiscoveryCapabilities(rawValue: UInt8(reader.read(bits: 8)))
        let discriminator = UInt16(reader.read(bits: 12))
        let passcode = UInt32(reader.read(bits: 27))
        if passcode == 0 { throw .invalidPasscode(0) }
        self.init(version: version, vendorID: vendor, productID: product, commissioningFlow: flow,
                  discoveryCapabilities: capabilities, discriminator: discriminator, passcode: passcode)
    }

    // MARK: Manual pairing code

    /// The manual pairing code: 11 digits, or 21 with vendor and product ids when the flow is not standard.
    public var manualPairingCode: String {
        let longCode = commissioningFlow != .standard
        let short = UInt32(shortDiscriminator)
        let chunk1 = (longCode ? 1 << 2 : 0) | (short >> 2)
        let chunk2 = (short & 0x3) << 14 | (passcode & 0x3FFF)
        let chunk3 = (passcode & Self.passcodeMask) >> 14
        var digits = String(chunk1) + Self.padded(chunk2, 5) + Self.padded(chunk3, 4)
        if longCode { digits += Self.padded(UInt32(vendorID), 5) + Self.padded(UInt32(productID), 5) }
        return digits + String(Verhoeff.checkDigit(Array(digits.utf8).map { $0 - UInt8(ascii: "0") }))
    }

    /// Reads a manual pairing code (digits only; a person's dashes and spaces are the caller's to drop). The
    /// discriminator read is the short one in the top 4 bits of `discriminator`, as the code carries no more.
    public init(manualPairingCode text: String) throws(SetupPayloadError) {
        let chars = Array(text.utf8)
        var digits: [UInt8] = []
        for (offset, c) in chars.enumerated() {
            guard c >= UInt8(ascii: "0"), c <= UInt8(ascii: "9") else { throw .invalidDigit(offset: offset) }
            digits.append(c - UInt8(ascii: "0"))
        }
        guard digits.count == 11 || digits.count == 21 else { throw .invalidLength(digits.count) }
        let longCode = digits[0] >= 4
        guard digits.count == (longCode ? 21 : 11) else { throw .invalidLength(digits.count) }
        // The first digit's top bit is reserved: 8 and 9 are not codes.
        guard digits[0] <= 7 else { throw .invalidDigit(offset: 0) }
        guard Verhoeff.checkDigit(Array(digits.dropLast())) == digits.last else { throw .checkDigitMismatch }
        func number(_ range: Range<Int>) -> UInt32 { digits[range].reduce(0) { $0 * 10 + UInt32($1) } }
        let chunk1 = number(0..<1), chunk2 = number(1..<6), chunk3 = number(6..<10)
        guard chunk2 <= 0xFFFF, chunk3 <= 0x1FFF else { throw .invalidDigit(offset: chunk2 > 0xFFFF ? 1 : 6) }
        let short = UInt16((chunk1 & 0x3) << 2 | chunk2 >> 14)
        let passcode = (chunk3 << 14) | (chunk2 & 0x3FFF)
        if passcode == 0 { throw .invalidPasscode(0) }
        var vendor: UInt16 = 0, product: UInt16 = 0
        if longCode {
            let v = number(10..<15), p = number(15..<20)
            guard v <= 0xFFFF else { throw .invalidDigit(offset: 10) }
            guard p <= 0xFFFF else { throw .invalidDigit(offset: 15) }
            vendor = UInt16(v)
            product = UInt16(p)
        }
        self.init(vendorID: vendor, productID: product, commissioningFlow: longCode ? .custom : .standard,
                  discoveryCapabilities: [], discriminator: short << 8, passcode: passcode)
    }

    private static func padded(_ value: UInt32, _ width: Int) -> String {
        let text = String(value)
        return String(repeating: "0", count: max(0, width - text.count)) + text
    }
}

/// Base38 (5.1.3.1): 3 bytes to 5 characters, 2 to 4, 1 to 2, least significant character first.
public enum Base38 {
    static let alphabet = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ-.".utf8)

    public static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        var index = 0
        while index < bytes.count {
            let chunk = bytes[index..<min(index + 3, bytes.count)]
            var value = chunk.reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            for _ in 0..<[0, 2, 4, 5][chunk.count] {
                out.append(alphabet[Int(value % 38)])
                value /= 38
            }
            index += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    public static func decode(_ text: [UInt8]) throws(SetupPayloadError) -> [UInt8] {
        var out: [UInt8] = []
        var index = 0
        while index < text.count {
            let length = min(5, text.count - index)
            let byteCount = [0, -1, 1, -1, 2, 3][length]
            guard byteCount > 0 else { throw .invalidBase38Chunk(offset: index) }
            var value: UInt32 = 0
            for offset in (index..<(index + length)).reversed() {
                guard let digit = alphabet.firstIndex(of: text[offset]) else {
                    throw .invalidBase38Character(offset: offset)
                }
                value = value * 38 + UInt32(digit)
            }
            guard value >> (8 * byteCount) == 0 else { throw .invalidBase38Chunk(offset: index) }
            for i in 0..<byteCount { out.append(UInt8(truncatingIfNeeded: value >> (8 * i))) }
            index += length
        }
        return out
    }
}

/// The Verhoeff check digit over decimal digits (dihedral group D5), as the manual pairing code uses it.
public enum Verhoeff {
    private static let multiplication: [[UInt8]] = [
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9], [1, 2, 3, 4, 0, 6, 7, 8, 9, 5], [2, 3, 4, 0, 1, 7, 8, 9, 5, 6],
        [3, 4, 0, 1, 2, 8, 9, 5, 6, 7], [4, 0, 1, 2, 3, 9, 5, 6, 7, 8], [5, 9, 8, 7, 6, 0, 4, 3, 2, 1],
        [6, 5, 9, 8, 7, 1, 0, 4, 3, 2], [7, 6, 5, 9, 8, 2, 1, 0, 4, 3], [8, 7, 6, 5, 9, 3, 2, 1, 0, 4],
        [9, 8, 7, 6, 5, 4, 3, 2, 1, 0],
    ]
    private static let permutation: [[UInt8]] = [
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9], [1, 5, 7, 6, 2, 8, 3, 0, 9, 4], [5, 8, 0, 3, 7, 9, 6, 1, 4, 2],
        [8, 9, 1, 6, 0, 4, 3, 5, 2, 7], [9, 4, 5, 3, 1, 2, 6, 8, 7, 0], [4, 2, 8, 6, 5, 7, 3, 9, 0, 1],
        [2, 7, 9, 3, 8, 0, 6, 4, 1, 5], [7, 0, 4, 6, 9, 1, 3, 2, 5, 8],
    ]
    private static let inverse: [UInt8] = [0, 4, 3, 2, 1, 5, 6, 7, 8, 9]

    /// The digit to append to `digits` (each 0…9).
    public static func checkDigit(_ digits: [UInt8]) -> UInt8 {
        var c: UInt8 = 0
        for (i, d) in digits.reversed().enumerated() {
            c = multiplication[Int(c)][Int(permutation[(i + 1) % 8][Int(d % 10)])]
        }
        return inverse[Int(c)]
    }
}

/// Bits appended least significant first, into bytes filled from their lowest bit.
struct BitWriter {
    var bytes: [UInt8] = []
    var bitCount = 0

    mutating func write(_ value: UInt64, bits: Int) {
        for i in 0..<bits {
            if bitCount % 8 == 0 { bytes.append(0) }
            if value >> i & 1 == 1 { bytes[bytes.count - 1] |= 1 << (bitCount % 8) }
            bitCount += 1
        }
    }
}

/// Reads what `BitWriter` writes; reading past the end gives zeros (callers check the length first).
struct BitReader {
    let bytes: [UInt8]
    var position = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    mutating func read(bits: Int) -> UInt64 {
        var value: UInt64 = 0
        for i in 0..<bits {
            let byte = position / 8
            if byte < bytes.count, bytes[byte] >> (position % 8) & 1 == 1 { value |= 1 << i }
            position += 1
        }
        return value
    }
}
