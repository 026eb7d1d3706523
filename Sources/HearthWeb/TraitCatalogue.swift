// `GET /api/traits`: every trait the hub's engine runs, described as the page needs to draw its controls — each
// attribute's kind, range, nullability and writability, each command's fields — so a maker's own trait gets
// controls too, without the page knowing it.
import HearthEngine
import HearthJSON
import HearthModel

enum TraitCatalogue {
    static func json(_ registry: TraitRegistry) -> JSON {
        let descriptors = registry.servers.values.map { server in server.descriptor }
        return .object(descriptors.sorted { $0.id.qualifiedName < $1.id.qualifiedName }.map { d in
            (key: d.id.qualifiedName, value: JSON.object([
                ("attributes", .object(d.attributes.map { a in
                    (key: a.name, value: shape(a.type, constraint: a.constraint, nullable: a.isNullable,
                                              extra: [("writable", .bool(a.isWritable))]))
                })),
                ("commands", .object(d.commands.map { c in
                    (key: c.name, value: JSON.object([("fields", .array(c.fields.map { f in
                        shape(f.type, constraint: f.constraint, nullable: f.isNullable,
                              extra: [("name", .string(f.name))])
                    }))]))
                })),
            ]))
        })
    }

    /// `{"kind":"int","min":0,"max":254}`, `{"kind":"enum","cases":[…]}`, `{"kind":"bool"}`, `{"kind":"string"}`,
    /// or `{"kind":"other"}` for bitmaps, structs and lists (shown, not edited).
    static func shape(
        _ type: ValueType, constraint: ClosedRange<Int>?, nullable: Bool, extra: [(key: String, value: JSON)]
    ) -> JSON {
        var m = extra
        m.append(("nullable", .bool(nullable)))
        switch type {
        case .bool: m.append(("kind", .string("bool")))
        case .string(let max): m += [("kind", .string("string")), ("maxLength", .int(max))]
        case .enumeration(let e): m += [("kind", .string("enum")), ("cases", .array(e.cases.map { .string($0.name) }))]
        case .uint8, .uint16, .uint32, .int16, .int64, .uint64:
            let r = constraint ?? type.integerRange ?? 0...0
            m += [("kind", .string("int")), ("min", .int(r.lowerBound)), ("max", .int(r.upperBound))]
        case .bitmap, .structure, .list: m.append(("kind", .string("other")))
        }
        return .object(m)
    }
}
