public import HearthModel

/// Writes a device document straight to bytes, without building a `JSON` tree first.
///
/// The document is published after every state change, on the path between a command and its
/// answer, so it is written in one pass into one buffer. Each trait's static part (`attributeInfo`
/// and `commands`, fixed for a trait instance's lifetime) is written once and reused. The output is
/// byte for byte `DeviceDocument.document(device).bytes` (a test holds it to that).
public struct DocumentWriter: Sendable {
    /// Static fragments by device id, type index and trait index.
    private var fragments: [String: [[[UInt8]]]] = [:]

    public init() {}

    public mutating func document(_ d: HomeDevice) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(2048)
        key("id", &out); JSON.writeString(d.id, to: &out)
        comma("name", &out); JSON.writeString(d.name, to: &out)
        comma("structureId", &out); optional(d.structureID, &out)
        comma("roomId", &out); optional(d.roomID, &out)
        comma("isMatterDevice", &out); out.append(contentsOf: d.isMatterDevice ? JSON.trueBytes : JSON.falseBytes)
        comma("sourceConnectivity", &out); connectivity(d.sourceConnectivity, &out)
        comma("types", &out)
        out.append(UInt8(ascii: "["))
        var cached = fragments[d.id] ?? []
        let fresh = cached.count != d.types.count
        if fresh { cached = [] }
        for (t, type) in d.types.enumerated() {
            if t > 0 { out.append(UInt8(ascii: ",")) }
            out.append(contentsOf: Array(#"{"type":"#.utf8))
            JSON.writeString(type.descriptor.name, to: &out)
            out.append(contentsOf: Array(#","deviceTypeId":"#.utf8))
            JSON.writeInt(Int(type.descriptor.id), to: &out)
            out.append(contentsOf: Array(#","isPrimaryType":"#.utf8))
            out.append(contentsOf: type.metadata.isPrimaryType ? JSON.trueBytes : JSON.falseBytes)
            out.append(contentsOf: Array(#","sourceConnectivity":"#.utf8))
            connectivity(type.sourceConnectivity, &out)
            out.append(contentsOf: Array(#","traits":{"#.utf8))
            if fresh { cached.append([]) }
            for (k, trait) in type.traits.enumerated() {
                if k > 0 { out.append(UInt8(ascii: ",")) }
                JSON.writeString(trait.descriptor.id.qualifiedName, to: &out)
                out.append(contentsOf: Array(#":{"namespace":"#.utf8))
                JSON.writeString(trait.descriptor.id.namespace, to: &out)
                out.append(contentsOf: Array(#","clusterId":"#.utf8))
                JSON.writeInt(Int(trait.descriptor.clusterID), to: &out)
                out.append(contentsOf: Array(#","sourceConnectivity":"#.utf8))
                connectivity(trait.sourceConnectivity, &out)
                out.append(contentsOf: Array(#","attributes":{"#.utf8))
                var first = true
                for reading in trait.attributes {
                    guard let v = reading.value else { continue }
                    if !first { out.append(UInt8(ascii: ",")) }
                    first = false
                    JSON.writeString(reading.descriptor.name, to: &out)
                    out.append(UInt8(ascii: ":"))
                    write(v, as: reading.descriptor.type, &out)
                }
                out.append(UInt8(ascii: "}"))
                if fresh || cached[t].count <= k {
                    cached[t].append(staticPart(trait))
                }
                out.append(contentsOf: cached[t][k])
                out.append(UInt8(ascii: "}"))
            }
            raw("}}", &out)
        }
        raw("]}", &out)
        if fresh { fragments[d.id] = cached }
        return out
    }

    /// `ValueCoding.json(value, as: type).write(to:)` without the intermediate JSON.
    private func write(_ value: Value, as type: ValueType, _ out: inout [UInt8]) {
        switch (value, type) {
        case (.null, _): raw("null", &out)
        case (.bool(let b), _): if b { raw("true", &out) } else { raw("false", &out) }
        case (.string(let s), _): JSON.writeString(s, to: &out)
        case (.int(let i), .enumeration(let e)):
            if let name = e.name(of: i) { JSON.writeString(name, to: &out) } else { JSON.writeInt(i, to: &out) }
        case (.int(let i), .bitmap(let b)):
            out.append(UInt8(ascii: "{"))
            for (k, bit) in b.bits.enumerated() {
                if k > 0 { out.append(UInt8(ascii: ",")) }
                JSON.writeString(bit.name, to: &out)
                out.append(UInt8(ascii: ":"))
                if i & (1 << bit.bit) != 0 { raw("true", &out) } else { raw("false", &out) }
            }
            out.append(UInt8(ascii: "}"))
        case (.int(let i), _): JSON.writeInt(i, to: &out)
        }
    }

    /// `,"attributeInfo":{…},"commands":[…]`
    func staticPart(_ trait: TraitSnapshot) -> [UInt8] {
        var out: [UInt8] = []
        let info = JSON.object(trait.attributes.map { reading in
            (key: reading.descriptor.name, value: JSON.object([
                ("supported", .bool(reading.isSupported)), ("nullable", .bool(reading.descriptor.isNullable)),
                ("writable", .bool(reading.descriptor.isWritable)),
            ]))
        })
        out.append(contentsOf: Array(#","attributeInfo":"#.utf8))
        info.write(to: &out)
        out.append(contentsOf: Array(#","commands":"#.utf8))
        JSON.array(trait.supportedCommands.map(JSON.string)).write(to: &out)
        return out
    }

    /// Appends a literal without making an array of it.
    private func raw(_ s: StaticString, _ out: inout [UInt8]) {
        out.append(contentsOf: UnsafeBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount))
    }

    private func key(_ name: StaticString, _ out: inout [UInt8]) {
        out.append(UInt8(ascii: "{"))
        out.append(UInt8(ascii: "\""))
        raw(name, &out)
        raw("\":", &out)
    }

    private func comma(_ name: StaticString, _ out: inout [UInt8]) {
        raw(",\"", &out)
        raw(name, &out)
        raw("\":", &out)
    }

    private func optional(_ s: String?, _ out: inout [UInt8]) {
        if let s { JSON.writeString(s, to: &out) } else { out.append(contentsOf: JSON.nullBytes) }
    }

    private func connectivity(_ c: SourceConnectivity, _ out: inout [UInt8]) {
        out.append(contentsOf: Array(#"{"connectivityState":"#.utf8))
        JSON.writeString(c.connectivityState.rawValue, to: &out)
        out.append(contentsOf: Array(#","dataSourceLocality":"#.utf8))
        JSON.writeString(c.dataSourceLocality.rawValue, to: &out)
        out.append(UInt8(ascii: "}"))
    }
}

