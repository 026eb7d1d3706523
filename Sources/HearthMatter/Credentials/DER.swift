// The few DER shapes an operational certificate needs, written and read by hand: Matter certificates are a fixed,
// small profile of X.509 whose signature covers bytes we must rebuild exactly from Matter TLV, and libcrypto's
// encoder neither exposes that byte-for-byte control nor reads the profile's rules; no cryptography happens here.

/// A DER tag byte (only low-tag-number form: every tag of the certificate profile fits in one byte).
enum DERTag {
    static let boolean: UInt8 = 0x01
    static let integer: UInt8 = 0x02
    static let bitString: UInt8 = 0x03
    static let octetString: UInt8 = 0x04
    static let objectIdentifier: UInt8 = 0x06
    static let utf8String: UInt8 = 0x0C
    static let printableString: UInt8 = 0x13
    static let ia5String: UInt8 = 0x16
    static let utcTime: UInt8 = 0x17
    static let generalizedTime: UInt8 = 0x18
    static let sequence: UInt8 = 0x30
    static let set: UInt8 = 0x31
    /// `[n]` constructed, context-specific.
    static func contextConstructed(_ n: UInt8) -> UInt8 { 0xA0 | n }
    /// `[n]` primitive, context-specific.
    static func contextPrimitive(_ n: UInt8) -> UInt8 { 0x80 | n }
}

/// Appends DER elements to a byte buffer.
struct DERWriter {
    private(set) var bytes: [UInt8] = []

    mutating func append(tag: UInt8, contents: [UInt8]) {
        bytes.append(tag)
        Self.appendLength(contents.count, to: &bytes)
        bytes.append(contentsOf: contents)
    }

    /// A constructed element whose contents `build` writes.
    mutating func append(tag: UInt8, _ build: (inout DERWriter) -> Void) {
        var inner = DERWriter()
        build(&inner)
        append(tag: tag, contents: inner.bytes)
    }

    /// Bytes that are already a complete DER element.
    mutating func appendEncoded(_ element: [UInt8]) { bytes.append(contentsOf: element) }

    /// An INTEGER from unsigned big-endian magnitude bytes: leading zeros dropped, one added where the top bit is set.
    mutating func appendUnsignedInteger(bigEndian magnitude: [UInt8]) {
        var digits = Array(magnitude.drop { $0 == 0 })
        if digits.isEmpty { digits = [0] } else if digits[0] & 0x80 != 0 { digits.insert(0, at: 0) }
        append(tag: DERTag.integer, contents: digits)
    }

    mutating func appendInteger(_ value: UInt64) {
        var magnitude: [UInt8] = []
        for shift in stride(from: 56, through: 0, by: -8) {
            magnitude.append(UInt8(truncatingIfNeeded: value >> UInt64(shift)))
        }
        appendUnsignedInteger(bigEndian: magnitude)
    }

    static func appendLength(_ length: Int, to out: inout [UInt8]) {
        if length < 0x80 {
            out.append(UInt8(length))
            return
        }
        var octets: [UInt8] = []
        var rest = length
        while rest > 0 {
            octets.insert(UInt8(rest & 0xFF), at: 0)
            rest >>= 8
        }
        out.append(0x80 | UInt8(octets.count))
        out.append(contentsOf: octets)
    }
}

/// A DER element read from input: its tag, its contents, and the whole element's bytes.
struct DERElement {
    var tag: UInt8
    var contents: ArraySlice<UInt8>
    var encoded: ArraySlice<UInt8>
}

/// Why DER input was refused.
public struct DERError: Error, Sendable, Equatable, CustomStringConvertible {
    public var reason: String
    public var offset: Int

    public init(_ reason: String, at offset: Int) {
        self.reason = reason
        self.offset = offset
    }

    public var description: String { "DER: \(reason) at byte \(offset)" }
}

/// Reads consecutive DER elements from a slice, refusing indefinite or non-minimal lengths and high tag numbers.
struct DERReader {
    private let input: ArraySlice<UInt8>
    private(set) var position: Int

    init(_ input: ArraySlice<UInt8>) {
        self.input = input
        self.position = input.startIndex
    }

    init(_ input: [UInt8]) { self.init(input[...]) }

    var isAtEnd: Bool { position >= input.endIndex }

    /// The next element's tag without reading it.
    var peekTag: UInt8? { isAtEnd ? nil : input[position] }

    mutating func read() throws(DERError) -> DERElement {
        let start = position
        guard position < input.endIndex else { throw DERError("element expected, input ends", at: position) }
        let tag = input[position]
        guard tag & 0x1F != 0x1F else { throw DERError("high tag numbers are not used", at: position) }
        position += 1
        guard position < input.endIndex else { throw DERError("length expected, input ends", at: position) }
        let first = input[position]
        position += 1
        var length = 0
        if first < 0x80 {
            length = Int(first)
        } else {
            let count = Int(first & 0x7F)
            guard count >= 1, count <= 3 else { throw DERError("length of \(count) length bytes", at: position - 1) }
            guard input.endIndex - position >= count else {
                throw DERError("length bytes run past the input", at: position)
            }
            for _ in 0..<count {
                length = length << 8 | Int(input[position])
                position += 1
            }
            guard length >= 0x80, length >> (8 * (count - 1)) != 0 else {
                throw DERError("length not in its shortest form", at: position - count - 1)
            }
        }
        guard input.endIndex - position >= length else {
            throw DERError("contents of \(length) bytes run past the input", at: position)
        }
        let contents = input[position..<(position + length)]
        position += length
        return DERElement(tag: tag, contents: contents, encoded: input[start..<position])
    }

    /// The next element, which must have `tag`.
    mutating func read(expecting tag: UInt8, _ what: String) throws(DERError) -> DERElement {
        let at = position
        let element = try read()
        guard element.tag == tag else {
            throw DERError(
                "\(what): tag 0x\(String(element.tag, radix: 16)), expected 0x\(String(tag, radix: 16))", at: at)
        }
        return element
    }

    /// Requires that nothing follows.
    func expectEnd(_ what: String) throws(DERError) {
        guard isAtEnd else { throw DERError("\(what): unexpected bytes after the last element", at: position) }
    }

    /// Offset of the element's contents within the original input, for errors.
    var offset: Int { position }
}

extension DERElement {
    /// A reader over this element's contents.
    var reader: DERReader { DERReader(contents) }

    /// The contents of an unsigned INTEGER as big-endian magnitude bytes, refusing negatives and padding.
    func unsignedIntegerMagnitude(_ what: String) throws(DERError) -> [UInt8] {
        guard tag == DERTag.integer, !contents.isEmpty else {
            throw DERError("\(what): not an INTEGER", at: encoded.startIndex)
        }
        let first = contents[contents.startIndex]
        guard first & 0x80 == 0 else { throw DERError("\(what): negative INTEGER", at: encoded.startIndex) }
        if first == 0, contents.count > 1 {
            guard contents[contents.startIndex + 1] & 0x80 != 0 else {
                throw DERError("\(what): INTEGER not in its shortest form", at: encoded.startIndex)
            }
            return Array(contents.dropFirst())
        }
        return Array(contents)
    }

    func boolean(_ what: String) throws(DERError) -> Bool {
        guard tag == DERTag.boolean, contents.count == 1 else {
            throw DERError("\(what): not a BOOLEAN", at: encoded.startIndex)
        }
        switch contents[contents.startIndex] {
        case 0x00: return false
        case 0xFF: return true
        default: throw DERError("\(what): BOOLEAN neither 00 nor FF", at: encoded.startIndex)
        }
    }
}
