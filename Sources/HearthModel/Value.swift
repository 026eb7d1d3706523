/// An attribute or command-field value as the engine stores it.
///
/// Enumerations and bitmaps are kept as their integers, exactly as Matter encodes them; their
/// names live in the `ValueType` so an adapter (JSON over MQTT) can speak names to clients
/// without the engine ever comparing strings on its hot path.
public enum Value: Sendable, Hashable, CustomStringConvertible {
    case null
    case bool(Bool)
    case int(Int)
    case string(String)
    /// A Matter struct's fields by name (HoldTimeLimitsStruct's `holdTimeMin`, …); its `StructType` gives their
    /// order.
    case structure([String: Value])
    /// A Matter list, in order (Groups' GroupList, a scene's extension field sets, ElectricalPowerMeasurement's
    /// `accuracy`).
    case list([Value])

    public var isNull: Bool { if case .null = self { true } else { false } }
    public var boolValue: Bool? { if case .bool(let b) = self { b } else { nil } }
    public var intValue: Int? { if case .int(let i) = self { i } else { nil } }
    public var stringValue: String? { if case .string(let s) = self { s } else { nil } }
    public var structureValue: [String: Value]? { if case .structure(let f) = self { f } else { nil } }
    public var listValue: [Value]? { if case .list(let l) = self { l } else { nil } }

    public var description: String {
        switch self {
        case .null: "null"
        case .bool(let b): String(b)
        case .int(let i): String(i)
        case .string(let s): "\"\(s)\""
        case .structure(let f):
            "{" + f.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", ") + "}"
        case .list(let l): "[" + l.map(\.description).joined(separator: ", ") + "]"
        }
    }
}

/// A Matter enumeration: raw values and their lowerCamelCase names.
public struct EnumType: Sendable, Hashable {
    public var name: String
    public var cases: [(value: Int, name: String)]

    public init(_ name: String, _ cases: [(Int, String)]) {
        self.name = name
        self.cases = cases.map { (value: $0.0, name: $0.1) }
    }

    public func name(of value: Int) -> String? { cases.first { $0.value == value }?.name }
    public func value(named name: String) -> Int? { cases.first { $0.name == name }?.value }

    public static func == (a: EnumType, b: EnumType) -> Bool {
        a.name == b.name && a.cases.elementsEqual(b.cases) { $0.value == $1.value && $0.name == $1.name }
    }
    public func hash(into hasher: inout Hasher) { hasher.combine(name) }
}

/// A Matter bitmap: bit positions and their lowerCamelCase names.
public struct BitmapType: Sendable, Hashable {
    public var name: String
    public var bits: [(bit: Int, name: String)]

    public init(_ name: String, _ bits: [(Int, String)]) {
        self.name = name
        self.bits = bits.map { (bit: $0.0, name: $0.1) }
    }

    /// The bits a client may set; any other bit is reserved.
    public var mask: Int { bits.reduce(0) { $0 | (1 << $1.bit) } }

    public static func == (a: BitmapType, b: BitmapType) -> Bool {
        a.name == b.name && a.bits.elementsEqual(b.bits) { $0.bit == $1.bit && $0.name == $1.name }
    }
    public func hash(into hasher: inout Hasher) { hasher.combine(name) }
}

/// A Matter struct: named fields, each with its type and range (HoldTimeLimitsStruct: `holdTimeMin`, `holdTimeMax`,
/// `holdTimeDefault`). A field's default is unused here: a struct value names every field.
public struct StructType: Sendable, Hashable {
    public var name: String
    public var fields: [FieldDescriptor]

    public init(_ name: String, _ fields: [FieldDescriptor]) {
        self.name = name
        self.fields = fields
    }

    public func field(named name: String) -> FieldDescriptor? { fields.first { $0.name == name } }
}

/// The Matter data type of an attribute or a command field.
public enum ValueType: Sendable, Hashable, CustomStringConvertible {
    case bool
    case uint8, uint16, uint32, int16
    /// Matter's int64 as the energy and power clusters use it (power-mW, voltage-mV, amperage-mA, energy-mWh): their
    /// constraint is −2^62 … 2^62, which is this type's range.
    case int64
    /// Matter's uint64 (systime-ms, a fixed accuracy): 0 … Int.max, what a Swift Int and a JSON integer carry.
    case uint64
    case enumeration(EnumType)
    case bitmap(BitmapType)
    case string(maxLength: Int)
    case structure(StructType)
    /// A list of `element`s, at most `maxCount` of them.
    indirect case list(ValueType, maxCount: Int)

    /// The range the type itself allows, before any constraint of the attribute.
    public var integerRange: ClosedRange<Int>? {
        switch self {
        case .uint8: 0...0xFF
        case .uint16: 0...0xFFFF
        case .uint32: 0...0xFFFF_FFFF
        case .int16: -0x8000...0x7FFF
        case .int64: -(1 << 62)...(1 << 62)
        case .uint64: 0...Int.max
        case .enumeration: 0...0xFF
        case .bitmap(let b): 0...b.mask
        case .bool, .string, .structure, .list: nil
        }
    }

    public var description: String {
        switch self {
        case .bool: "bool"
        case .uint8: "uint8"
        case .uint16: "uint16"
        case .uint32: "uint32"
        case .int16: "int16"
        case .int64: "int64"
        case .uint64: "uint64"
        case .enumeration(let e): "enum \(e.name)"
        case .bitmap(let b): "bitmap \(b.name)"
        case .string(let n): "string (at most \(n) bytes)"
        case .structure(let s): "struct \(s.name)"
        case .list(let e, _): "list of \(e)"
        }
    }

    /// Checks `value` against this type and `constraint`.
    ///
    /// The errors follow Matter's order: a value of the wrong kind is `invalidDataType`, a value of the
    /// right kind outside what the type or the constraint allows is `constraintError`. `what` names the
    /// attribute or field in the message, so a client knows which part of the request to fix.
    public func check(_ value: Value, nullable: Bool, constraint: ClosedRange<Int>? = nil,
                      what describe: @autoclosure () -> String) throws(HomeError)
    {
        // The name is built only for an error: checks run on every command and must not allocate.
        switch (self, value) {
        case (_, .null):
            guard nullable else { throw .constraintError("\(describe()) cannot be null") }
        case (.bool, .bool):
            break
        case (.string(let maxLength), .string(let s)):
            guard s.utf8.count <= maxLength else {
                throw .constraintError("\(describe()) is \(s.utf8.count) bytes long; at most \(maxLength) are allowed")
            }
        case (.enumeration(let e), .int(let i)):
            guard e.name(of: i) != nil else {
                let names = e.cases.map { "\($0.value) (\($0.name))" }.joined(separator: ", ")
                throw .constraintError("\(describe()) \(i) is not a \(e.name) value; allowed: \(names)")
            }
        case (.structure(let s), .structure(let values)):
            for key in values.keys.sorted() where s.field(named: key) == nil {
                throw .invalidDataType("\(describe()) has no field '\(key)'; the fields of \(s.name) are "
                                       + s.fields.map(\.name).joined(separator: ", "))
            }
            for field in s.fields {
                guard let v = values[field.name] else {
                    throw .invalidDataType("\(describe()) needs the field '\(field.name)' (\(field.type))")
                }
                try field.type.check(v, nullable: field.isNullable, constraint: field.constraint,
                                     what: "\(describe()).\(field.name)")
            }
        case (.list(let element, let maxCount), .list(let items)):
            guard items.count <= maxCount else {
                throw .constraintError("\(describe()) has \(items.count) entries; at most \(maxCount) are allowed")
            }
            for (n, item) in items.enumerated() {
                try element.check(item, nullable: false, constraint: constraint, what: "\(describe())[\(n)]")
            }
        case (.bitmap(let b), .int(let i)):
            guard i >= 0, i & ~b.mask == 0 else {
                let names = b.bits.map(\.name).joined(separator: ", ")
                throw .constraintError("\(describe()) sets bits outside \(b.name); allowed bits: \(names)")
            }
        case (_, .int(let i)) where integerRange != nil:
            let range = constraint ?? integerRange!
            guard range.contains(i) else {
                throw .constraintError(
                    "\(describe()) \(i) is out of range; allowed: \(range.lowerBound)…\(range.upperBound)")
            }
        default:
            throw .invalidDataType("\(describe()) must be \(nullable ? "null or " : "")\(description), not \(value)")
        }
    }
}
