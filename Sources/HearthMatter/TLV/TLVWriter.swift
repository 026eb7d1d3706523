// The TLV writer: an element to bytes, each integer, length and tag in the fewest bytes that hold it, so that equal
// elements always give equal bytes.

extension TLVElement {
    /// The element's TLV bytes.
    public func encoded() -> [UInt8] {
        var out: [UInt8] = []
        encode(into: &out)
        return out
    }

    /// Appends the element's TLV bytes to `out`.
    public func encode(into out: inout [UInt8]) {
        let controlIndex = out.count
        out.append(0)
        let tagControl = Self.appendTag(tag, to: &out)
        let type: UInt8
        switch value {
        case .signed(let v):
            let width = Int64(Int8.min)...Int64(Int8.max) ~= v ? 0 : Int64(Int16.min)...Int64(Int16.max) ~= v ? 1
                : Int64(Int32.min)...Int64(Int32.max) ~= v ? 2 : 3
            Self.appendLittleEndian(UInt64(bitPattern: v), width: 1 << width, to: &out)
            type = UInt8(width)
        case .unsigned(let v):
            let width = Self.widthCode(v)
            Self.appendLittleEndian(v, width: 1 << width, to: &out)
            type = 0x04 + UInt8(width)
        case .bool(let v): type = v ? 0x09 : 0x08
        case .float(let v):
            Self.appendLittleEndian(UInt64(v.bitPattern), width: 4, to: &out)
            type = 0x0A
        case .double(let v):
            Self.appendLittleEndian(v.bitPattern, width: 8, to: &out)
            type = 0x0B
        case .utf8(let s):
            type = 0x0C + Self.appendLengthPrefixed(s.utf8, to: &out)
        case .bytes(let b):
            type = 0x10 + Self.appendLengthPrefixed(b, to: &out)
        case .null: type = 0x14
        case .structure(let members), .array(let members), .list(let members):
            for member in members { member.encode(into: &out) }
            out.append(0x18)
            type = if case .structure = value { 0x15 } else if case .array = value { 0x16 } else { 0x17 }
        }
        out[controlIndex] = tagControl << 5 | type
    }

    /// Appends the tag's bytes; returns its tag control (the control byte's top 3 bits).
    private static func appendTag(_ tag: TLVTag, to out: inout [UInt8]) -> UInt8 {
        switch tag {
        case .anonymous:
            return 0
        case .context(let n):
            out.append(n)
            return 1
        case .commonProfile(let n):
            appendLittleEndian(UInt64(n), width: n <= 0xFFFF ? 2 : 4, to: &out)
            return n <= 0xFFFF ? 2 : 3
        case .implicitProfile(let n):
            appendLittleEndian(UInt64(n), width: n <= 0xFFFF ? 2 : 4, to: &out)
            return n <= 0xFFFF ? 4 : 5
        case .fullyQualified(let vendor, let profile, let n):
            appendLittleEndian(UInt64(vendor), width: 2, to: &out)
            appendLittleEndian(UInt64(profile), width: 2, to: &out)
            appendLittleEndian(UInt64(n), width: n <= 0xFFFF ? 2 : 4, to: &out)
            return n <= 0xFFFF ? 6 : 7
        }
    }

    /// Appends a length and the bytes; returns the length's width code (0: 1 byte … 3: 8 bytes).
    private static func appendLengthPrefixed(_ bytes: some Collection<UInt8>, to out: inout [UInt8]) -> UInt8 {
        let width = widthCode(UInt64(bytes.count))
        appendLittleEndian(UInt64(bytes.count), width: 1 << width, to: &out)
        out.append(contentsOf: bytes)
        return UInt8(width)
    }

    /// 0, 1, 2 or 3 for the 1, 2, 4 or 8 bytes that hold `v`.
    private static func widthCode(_ v: UInt64) -> Int {
        v <= 0xFF ? 0 : v <= 0xFFFF ? 1 : v <= 0xFFFF_FFFF ? 2 : 3
    }

    static func appendLittleEndian(_ v: UInt64, width: Int, to out: inout [UInt8]) {
        for i in 0..<width { out.append(UInt8(truncatingIfNeeded: v >> (8 * i))) }
    }
}
