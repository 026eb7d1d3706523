// Matter TLV (core specification, appendix A): the tags, values and elements every Matter message body is made of.

/// A TLV element's tag: how the element is named inside its container.
public enum TLVTag: Hashable, Sendable, CustomStringConvertible {
    /// No tag: array members, the top-level element of most messages.
    case anonymous
    /// A context-specific tag: a member's number within its structure or list.
    case context(UInt8)
    /// A tag of the Matter common profile (profile 0), written in 2 bytes when it fits, else 4.
    case commonProfile(UInt32)
    /// A tag of the profile the reader implies from context, written in 2 bytes when it fits, else 4.
    case implicitProfile(UInt32)
    /// A tag naming its vendor and profile, written in 6 bytes when the tag number fits in 16 bits, else 8.
    case fullyQualified(vendor: UInt16, profile: UInt16, tag: UInt32)

    public var description: String {
        switch self {
        case .anonymous: "anonymous"
        case .context(let n): "context \(n)"
        case .commonProfile(let n): "common profile \(n)"
        case .implicitProfile(let n): "implicit profile \(n)"
        case .fullyQualified(let v, let p, let t): "vendor \(v) profile \(p) tag \(t)"
        }
    }
}

/// A TLV value. Integers keep their signedness (Matter's data model types them), not their width on the wire.
public enum TLVValue: Sendable, Equatable, CustomStringConvertible {
    case signed(Int64)
    case unsigned(UInt64)
    case bool(Bool)
    case float(Float)
    case double(Double)
    case utf8(String)
    case bytes([UInt8])
    case null
    /// Members with distinct, non-anonymous tags.
    case structure([TLVElement])
    /// Anonymous members, in order.
    case array([TLVElement])
    /// Members in order, tagged or not.
    case list([TLVElement])

    /// Equal values encode to the same bytes: floats compare by bit pattern (so NaN equals itself) and strings by
    /// their UTF-8 bytes (not by Unicode canonical equivalence, which would call different bytes equal).
    public static func == (a: TLVValue, b: TLVValue) -> Bool {
        switch (a, b) {
        case (.signed(let x), .signed(let y)): x == y
        case (.unsigned(let x), .unsigned(let y)): x == y
        case (.bool(let x), .bool(let y)): x == y
        case (.float(let x), .float(let y)): x.bitPattern == y.bitPattern
        case (.double(let x), .double(let y)): x.bitPattern == y.bitPattern
        case (.utf8(let x), .utf8(let y)): x.utf8.elementsEqual(y.utf8)
        case (.bytes(let x), .bytes(let y)): x == y
        case (.null, .null): true
        case (.structure(let x), .structure(let y)), (.array(let x), .array(let y)), (.list(let x), .list(let y)):
            x == y
        default: false
        }
    }

    public var description: String {
        switch self {
        case .signed(let v): "\(v)"
        case .unsigned(let v): "\(v)u"
        case .bool(let v): "\(v)"
        case .float(let v): "\(v)f"
        case .double(let v): "\(v)"
        case .utf8(let s): "\"\(s)\""
        case .bytes(let b): "h'" + b.map { byte in
            let digits = Array("0123456789abcdef")
            return String([digits[Int(byte >> 4)], digits[Int(byte & 15)]])
        }.joined() + "'"
        case .null: "null"
        case .structure(let m): "{" + m.map(\.description).joined(separator: ", ") + "}"
        case .array(let m): "[" + m.map(\.description).joined(separator: ", ") + "]"
        case .list(let m): "[[" + m.map(\.description).joined(separator: ", ") + "]]"
        }
    }

    /// The name of the value's type, for error messages.
    public var typeName: String {
        switch self {
        case .signed: "signed integer"
        case .unsigned: "unsigned integer"
        case .bool: "boolean"
        case .float: "float"
        case .double: "double"
        case .utf8: "UTF-8 string"
        case .bytes: "octet string"
        case .null: "null"
        case .structure: "structure"
        case .array: "array"
        case .list: "list"
        }
    }
}

/// One TLV element: a tag and a value.
public struct TLVElement: Sendable, Equatable, CustomStringConvertible {
    public var tag: TLVTag
    public var value: TLVValue

    public init(tag: TLVTag = .anonymous, _ value: TLVValue) {
        self.tag = tag
        self.value = value
    }

    /// A member with a context-specific tag, the common case inside a message structure.
    public init(context: UInt8, _ value: TLVValue) {
        self.init(tag: .context(context), value)
    }

    public var description: String {
        switch tag {
        case .anonymous: value.description
        case .context(let n): "\(n): \(value)"
        default: "(\(tag)): \(value)"
        }
    }
}
