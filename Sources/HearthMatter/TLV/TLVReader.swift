// The strict TLV reader: outside bytes to a `TLVElement`, refusing anything the specification does not allow, with
// the offset of the first wrong byte. It never traps: every length is checked against what is left before it is used.

/// What is wrong with TLV bytes, and where.
public struct TLVError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The input ends inside an element: `needed` more bytes were expected.
        case truncated(needed: Int)
        /// A string's bytes are not UTF-8.
        case invalidUTF8
        /// An element type the specification reserves (0x19–0x1F).
        case reservedElementType(UInt8)
        /// An end-of-container control byte (0x18 with a tag control) that is not the bare 0x18.
        case taggedEndOfContainer(UInt8)
        /// An end of container where no container is open.
        case unexpectedEndOfContainer
        /// The input ends before a container's end.
        case missingEndOfContainer
        /// Containers nest deeper than the reader allows.
        case nestingTooDeep(limit: Int)
        /// A string's length does not fit in memory this reader may address.
        case lengthOverflow(UInt64)
        /// A structure member without a tag.
        case anonymousStructureMember
        /// Two members of one structure with the same tag.
        case duplicateStructureMember(TLVTag)
        /// An array member with a tag.
        case taggedArrayMember(TLVTag)
        /// Bytes after the element.
        case trailingBytes(count: Int)
    }

    public var kind: Kind
    /// The offset, in the input, of the byte the problem is at (for truncation: the start of what is cut short).
    public var offset: Int

    public init(_ kind: Kind, at offset: Int) {
        self.kind = kind
        self.offset = offset
    }

    public var description: String {
        let what = switch kind {
        case .truncated(let needed): "input ends \(needed) byte\(needed == 1 ? "" : "s") short"
        case .invalidUTF8: "string is not UTF-8"
        case .reservedElementType(let t): "reserved element type 0x\(String(t, radix: 16))"
        case .taggedEndOfContainer(let c): "end of container with a tag (control byte 0x\(String(c, radix: 16)))"
        case .unexpectedEndOfContainer: "end of container outside any container"
        case .missingEndOfContainer: "container is not closed"
        case .nestingTooDeep(let limit): "containers nest deeper than \(limit)"
        case .lengthOverflow(let n): "length \(n) is too large"
        case .anonymousStructureMember: "structure member without a tag"
        case .duplicateStructureMember(let tag): "structure member \(tag) appears twice"
        case .taggedArrayMember(let tag): "array member with a tag (\(tag))"
        case .trailingBytes(let n): "\(n) byte\(n == 1 ? "" : "s") after the element"
        }
        return "TLV: \(what) at byte \(offset)"
    }
}

extension TLVElement {
    /// How deep containers may nest; deeper input is refused rather than risking the stack.
    public static let maximumDepth = 32

    /// Reads exactly one element that spans all of `bytes`.
    public init(decoding bytes: some Collection<UInt8>, maximumDepth: Int = TLVElement.maximumDepth) throws(TLVError) {
        let input = Array(bytes)
        var reader = TLVReader(input, maximumDepth: maximumDepth)
        let element = try reader.readElement()
        if reader.offset != input.count {
            throw TLVError(.trailingBytes(count: input.count - reader.offset), at: reader.offset)
        }
        self = element
    }

    /// Reads one element at the start of `bytes`, returning it and the number of bytes it took.
    public static func decodePrefix(of bytes: some Collection<UInt8>, maximumDepth: Int = TLVElement.maximumDepth)
        throws(TLVError) -> (element: TLVElement, length: Int)
    {
        var reader = TLVReader(Array(bytes), maximumDepth: maximumDepth)
        let element = try reader.readElement()
        return (element, reader.offset)
    }
}

/// A cursor over the input. Offsets are into `bytes`, which starts at 0.
struct TLVReader {
    let bytes: [UInt8]
    let maximumDepth: Int
    var offset = 0

    init(_ bytes: [UInt8], maximumDepth: Int) {
        self.bytes = bytes
        self.maximumDepth = maximumDepth
    }

    static let endOfContainer: UInt8 = 0x18

    mutating func readElement() throws(TLVError) -> TLVElement {
        if offset < bytes.count, bytes[offset] & 0x1F == Self.endOfContainer {
            throw TLVError(bytes[offset] == Self.endOfContainer ? .unexpectedEndOfContainer
                : .taggedEndOfContainer(bytes[offset]), at: offset)
        }
        return try readElement(depth: 0)
    }

    /// Reads an element whose control byte is at `offset` and is not an end of container.
    private mutating func readElement(depth: Int) throws(TLVError) -> TLVElement {
        let start = offset
        let control = try take(1, at: start)[start]
        let type = control & 0x1F
        if type >= 0x19 { throw TLVError(.reservedElementType(type), at: start) }
        let tag = try readTag(control: control >> 5)
        let value: TLVValue
        switch type {
        case 0x00...0x03:
            let raw = try readLittleEndian(1 << Int(type))
            let bits = 8 << Int(type)
            // Sign-extend from the element's width.
            value = .signed(bits == 64 ? Int64(bitPattern: raw) : Int64(bitPattern: raw << (64 - bits)) >> (64 - bits))
        case 0x04...0x07:
            value = .unsigned(try readLittleEndian(1 << Int(type - 4)))
        case 0x08: value = .bool(false)
        case 0x09: value = .bool(true)
        case 0x0A: value = .float(Float(bitPattern: UInt32(try readLittleEndian(4))))
        case 0x0B: value = .double(Double(bitPattern: try readLittleEndian(8)))
        case 0x0C...0x0F:
            let content = try readLengthPrefixed(lengthBytes: 1 << Int(type - 0x0C))
            guard let text = String(validating: content, as: UTF8.self) else {
                throw TLVError(.invalidUTF8, at: offset - content.count)
            }
            value = .utf8(text)
        case 0x10...0x13:
            value = .bytes(Array(try readLengthPrefixed(lengthBytes: 1 << Int(type - 0x10))))
        case 0x14: value = .null
        case 0x15, 0x16, 0x17:
            if depth >= maximumDepth { throw TLVError(.nestingTooDeep(limit: maximumDepth), at: start) }
            let members = try readMembers(of: type, depth: depth + 1)
            value = type == 0x15 ? .structure(members) : type == 0x16 ? .array(members) : .list(members)
        default:
            // 0x18 is handled by the callers; 0x19... were refused above.
            throw TLVError(.reservedElementType(type), at: start)
        }
        return TLVElement(tag: tag, value)
    }

    private mutating func readMembers(of type: UInt8, depth: Int) throws(TLVError) -> [TLVElement] {
        var members: [TLVElement] = []
        var seen: Set<TLVTag> = []
        while true {
            guard offset < bytes.count else { throw TLVError(.missingEndOfContainer, at: offset) }
            let control = bytes[offset]
            if control & 0x1F == Self.endOfContainer {
                if control != Self.endOfContainer { throw TLVError(.taggedEndOfContainer(control), at: offset) }
                offset += 1
                return members
            }
            let memberStart = offset
            let member = try readElement(depth: depth)
            switch type {
            case 0x15:
                if member.tag == .anonymous { throw TLVError(.anonymousStructureMember, at: memberStart) }
                if !seen.insert(member.tag).inserted {
                    throw TLVError(.duplicateStructureMember(member.tag), at: memberStart)
                }
            case 0x16:
                if member.tag != .anonymous { throw TLVError(.taggedArrayMember(member.tag), at: memberStart) }
            default:
                break
            }
            members.append(member)
        }
    }

    private mutating func readTag(control: UInt8) throws(TLVError) -> TLVTag {
        switch control {
        case 0: return .anonymous
        case 1: return .context(UInt8(try readLittleEndian(1)))
        case 2: return .commonProfile(UInt32(try readLittleEndian(2)))
        case 3: return .commonProfile(UInt32(try readLittleEndian(4)))
        case 4: return .implicitProfile(UInt32(try readLittleEndian(2)))
        case 5: return .implicitProfile(UInt32(try readLittleEndian(4)))
        case 6:
            let start = offset
            _ = try take(6, at: start)
            offset = start
            let vendor = UInt16(try readLittleEndian(2)), profile = UInt16(try readLittleEndian(2))
            return .fullyQualified(vendor: vendor, profile: profile, tag: UInt32(try readLittleEndian(2)))
        default:
            let start = offset
            _ = try take(8, at: start)
            offset = start
            let vendor = UInt16(try readLittleEndian(2)), profile = UInt16(try readLittleEndian(2))
            return .fullyQualified(vendor: vendor, profile: profile, tag: UInt32(try readLittleEndian(4)))
        }
    }

    private mutating func readLengthPrefixed(lengthBytes: Int) throws(TLVError) -> ArraySlice<UInt8> {
        let lengthStart = offset
        let length = try readLittleEndian(lengthBytes)
        guard length <= UInt64(Int.max) else { throw TLVError(.lengthOverflow(length), at: lengthStart) }
        return try take(Int(length), at: offset)
    }

    /// The `count` bytes at `start`, moving past them; the input ending first is a truncation at `start`.
    private mutating func take(_ count: Int, at start: Int) throws(TLVError) -> ArraySlice<UInt8> {
        let available = bytes.count - start
        if count > available { throw TLVError(.truncated(needed: count - available), at: start) }
        offset = start + count
        return bytes[start..<(start + count)]
    }

    private mutating func readLittleEndian(_ width: Int) throws(TLVError) -> UInt64 {
        var value: UInt64 = 0
        for (shift, byte) in try take(width, at: offset).enumerated() { value |= UInt64(byte) << (8 * shift) }
        return value
    }
}
