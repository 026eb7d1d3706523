// An engine value as Matter TLV and back, by its descriptor's type: integers keep the signedness Matter gives the type
// (an enumeration or bitmap is unsigned), a struct's fields are context tags in their descriptor's order (Matter
// numbers a struct's and a command's fields from 0 in the order the specification lists them, which is the descriptors'
// order), a list is a TLV array. Decoding checks kinds only: ranges and constraints are the engine's to check, so that
// a value refused from Matter is refused with the same status and words as from MQTT.

public import HearthMatter
public import HearthModel

/// Value ↔ TLV for the bridge.
public enum ValueTLV {
    /// The TLV of `value` as an attribute or field of `type`.
    public static func encode(_ value: Value, as type: ValueType?) -> TLVValue {
        switch (value, type) {
        case (.null, _): return .null
        case (.bool(let b), _): return .bool(b)
        case (.int(let i), .int16?), (.int(let i), .int64?): return .signed(Int64(i))
        case (.int(let i), _): return i >= 0 ? .unsigned(UInt64(i)) : .signed(Int64(i))
        case (.string(let s), _): return .utf8(s)
        case (.structure(let fields), .structure(let shape)?):
            return .structure(encodeFields(fields, shape.fields))
        case (.structure(let fields), _):
            // A struct without its shape (not one of the standard traits'): its fields in name order.
            return .structure(fields.keys.sorted().prefix(Int(UInt8.max) + 1).enumerated().map { n, key in
                TLVElement(context: UInt8(n), encode(fields[key]!, as: nil))
            })
        case (.list(let items), .list(let element, _)?):
            return .array(items.map { TLVElement(encode($0, as: element)) })
        case (.list(let items), _):
            return .array(items.map { TLVElement(encode($0, as: nil)) })
        }
    }

    /// The members of a struct or a command's fields: each present field under its position's context tag.
    public static func encodeFields(_ values: [String: Value], _ fields: [FieldDescriptor]) -> [TLVElement] {
        var members: [TLVElement] = []
        for (n, field) in fields.enumerated() where n <= Int(UInt8.max) {
            guard let value = values[field.name] else { continue }
            members.append(TLVElement(context: UInt8(n), encode(value, as: field.type)))
        }
        return members
    }

    /// The engine value of `tlv` as `type`; a TLV of another kind is `mismatch` (the caller's status: INVALID_COMMAND
    /// for a command field, INVALID_DATA_TYPE for a write).
    public static func decode(_ tlv: TLVValue, as type: ValueType, what: String,
                              mismatch: IMStatusCode) throws(IMError) -> Value {
        func wrongKind() -> IMError {
            IMError(mismatch, "\(what) must be \(type), not a TLV \(tlv.typeName)")
        }
        switch (tlv, type) {
        case (.null, _): return .null
        case (.bool(let b), .bool): return .bool(b)
        case (.unsigned(let u), _) where type.integerRange != nil:
            guard let i = Int(exactly: u) else { throw IMError(.constraintError, "\(what) \(u) is out of range") }
            return .int(i)
        case (.signed(let s), _) where type.integerRange != nil:
            guard let i = Int(exactly: s) else { throw IMError(.constraintError, "\(what) \(s) is out of range") }
            return .int(i)
        case (.utf8(let s), .string): return .string(s)
        case (.structure(let members), .structure(let shape)):
            return .structure(try decodeFields(members, shape.fields, what: what, mismatch: mismatch))
        case (.array(let items), .list(let element, _)), (.list(let items), .list(let element, _)):
            var values: [Value] = []
            values.reserveCapacity(items.count)
            for (n, item) in items.enumerated() {
                values.append(try decode(item.value, as: element, what: "\(what)[\(n)]", mismatch: mismatch))
            }
            return .list(values)
        default:
            throw wrongKind()
        }
    }

    /// A struct's or a command's fields by name from their context tags; members with tags the fields do not have are
    /// left out (a newer peer's optional fields), as the Interaction Model asks of a server.
    public static func decodeFields(_ members: [TLVElement], _ fields: [FieldDescriptor], what: String,
                                    mismatch: IMStatusCode) throws(IMError) -> [String: Value] {
        var values: [String: Value] = [:]
        for member in members {
            guard case .context(let tag) = member.tag, Int(tag) < fields.count else { continue }
            let field = fields[Int(tag)]
            values[field.name] = try decode(member.value, as: field.type, what: "\(what).\(field.name)",
                                            mismatch: mismatch)
        }
        return values
    }
}

extension IMError {
    /// The Interaction Model's answer for an engine refusal: HomeError carries the Matter status the engine chose
    /// (docs/matter.md, "Status codes"), with its message for logs.
    public init(_ error: HomeError) {
        self.init(IMStatusCode(rawValue: error.status.rawStatus), error.message)
    }
}
