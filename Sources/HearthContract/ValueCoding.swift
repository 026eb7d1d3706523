public import HearthJSON
public import HearthModel

/// Converts between the engine's values and the JSON clients send and read.
///
/// The engine keeps enums and bitmaps as Matter's integers; clients read and write them by name
/// (`"startUpOnOff":"toggle"`, `"optionsMask":{"executeIfOff":true}`), so no client has to know a
/// Matter number to use Hearth.
public enum ValueCoding {
    public static func json(_ value: Value, as type: ValueType) -> JSON {
        switch (value, type) {
        case (.null, _): return .null
        case (.bool(let b), _): return .bool(b)
        case (.string(let s), _): return .string(s)
        case (.int(let i), .enumeration(let e)): return e.name(of: i).map(JSON.string) ?? .int(i)
        case (.int(let i), .bitmap(let b)):
            return .object(b.bits.map { (key: $0.name, value: JSON.bool(i & (1 << $0.bit) != 0)) })
        case (.int(let i), _): return .int(i)
        case (.structure(let fields), .structure(let t)):
            // The struct's field order, then any field the type does not name (none, for a value the engine made).
            var members = t.fields.compactMap { f in fields[f.name].map { (key: f.name, value: json($0, as: f.type)) } }
            for (name, v) in fields.sorted(by: { $0.key < $1.key }) where t.field(named: name) == nil {
                members.append((name, json(v, as: .bool)))
            }
            return .object(members)
        case (.structure(let fields), _):
            return .object(fields.sorted { $0.key < $1.key }.map { (key: $0.key, value: json($0.value, as: .bool)) })
        case (.list(let items), .list(let element, _)):
            return .array(items.map { json($0, as: element) })
        case (.list(let items), _):
            return .array(items.map { json($0, as: .bool) })
        }
    }

    /// A client's JSON as an engine value of `type` (or as the JSON says, when the type is unknown:
    /// the engine then reports what is wrong with the name). `what` names the field in messages.
    public static func value(_ json: JSON, as type: ValueType?, what: String) throws(HomeError) -> Value {
        switch (json, type) {
        case (.null, _): return .null
        case (.bool(let b), _): return .bool(b)
        case (.int(let i), _): return .int(i)
        case (.double(let d), _):
            throw .invalidDataType("\(what) must be a whole number, not \(d)")
        case (.string(let s), .enumeration(let e)?):
            guard let v = e.value(named: s) else {
                throw .constraintError("\(what) '\(s)' is not one of \(e.cases.map(\.name).joined(separator: ", "))")
            }
            return .int(v)
        case (.string(let s), _): return .string(s)
        case (.object(let members), .bitmap(let b)?):
            var bits = 0
            for (name, flag) in members {
                guard let bit = b.bits.first(where: { $0.name == name })?.bit else {
                    throw .constraintError(
                        "\(what) has no flag '\(name)'; its flags are \(b.bits.map(\.name).joined(separator: ", "))")
                }
                guard case .bool(let on) = flag else {
                    throw .invalidDataType("\(what).\(name) must be true or false, not \(flag.kind)")
                }
                if on { bits |= 1 << bit }
            }
            return .int(bits)
        case (.object(let members), .structure(let t)?):
            var fields: [String: Value] = [:]
            for (name, v) in members {
                guard let field = t.field(named: name) else {
                    throw .invalidDataType("\(what) has no field '\(name)'; the fields of \(t.name) are "
                                           + t.fields.map(\.name).joined(separator: ", "))
                }
                fields[name] = try value(v, as: field.type, what: "\(what).\(name)")
            }
            return .structure(fields)
        case (.array(let items), .list(let element, _)?):
            var values: [Value] = []
            for (n, item) in items.enumerated() { values.append(try value(item, as: element, what: "\(what)[\(n)]")) }
            return .list(values)
        case (.object, _), (.array, _):
            let expected = type.map { " (\($0))" } ?? ""
            throw .invalidDataType("\(what) must be a single value\(expected), not \(json.kind)")
        }
    }
}
