import HearthContract
import HearthJSON
public import HearthEngine
import HearthModel

/// Writes a device document straight to bytes from a `DeviceView`, without a snapshot or a `JSON` tree.
///
/// The document is published after every state change, on the path between a command and the state a
/// client waits for, so everything that does not change between two documents is encoded once and
/// shared by every device of the same kind: each device type's opening, each trait's opening, and per
/// trait and set of supported attributes and commands (a trait mirrored from a peer learns them late)
/// the bytes between its values — keys, and after the last value `attributeInfo` and `commands` — as
/// one segment per value (`TraitPlan`); the connectivity objects come from a table of their 20 values.
/// What is left to write per document is the device's id, name, structure and room, and the values:
/// 716 of a bench document's 4,008 bytes change, of which 450 are connectivity objects from the table
/// (docs/benchmarks.md). The output is byte for byte `DeviceDocument.document(device).bytes`
/// (tests hold it to that).
public struct DocumentWriter: Sendable {
    /// What every trait with one descriptor shares; a class, so that using it copies nothing.
    final class TraitLayout: Sendable {
        /// `"onOff":{"namespace":"matter","clusterId":6,"sourceConnectivity":`
        let opening: [UInt8]
        let attributes: [AttributeDescriptor]
        let ids: [UInt32]
        let types: [ValueType]
        /// `"onOff":` for each attribute, in descriptor order, one after the other; `keyEnds[i]` ends key `i`.
        let keys: [UInt8]
        let keyEnds: [Int]
        let commands: [CommandDescriptor]
        /// Bit sets only work up to 64 attributes and commands; a larger trait's closing is written each time.
        var isCacheable: Bool { attributes.count <= 64 && commands.count <= 64 }

        init(_ descriptor: TraitDescriptor) {
            var opening: [UInt8] = []
            JSON.writeString(descriptor.id.qualifiedName, to: &opening)
            DocumentWriter.raw(#":{"namespace":"#, &opening); JSON.writeString(descriptor.id.namespace, to: &opening)
            DocumentWriter.raw(#","clusterId":"#, &opening); JSON.writeInt(Int(descriptor.clusterID), to: &opening)
            DocumentWriter.raw(#","sourceConnectivity":"#, &opening)
            var keys: [UInt8] = [], keyEnds: [Int] = []
            for a in descriptor.attributes {
                JSON.writeString(a.name, to: &keys)
                keys.append(UInt8(ascii: ":"))
                keyEnds.append(keys.count)
            }
            self.opening = opening
            self.attributes = descriptor.attributes
            self.ids = descriptor.attributes.map(\.id)
            self.types = descriptor.attributes.map(\.type)
            self.keys = keys
            self.keyEnds = keyEnds
            self.commands = descriptor.commands
        }

        func key(_ i: Int) -> Range<Int> { (i == 0 ? 0 : keyEnds[i - 1])..<keyEnds[i] }
    }

    /// Per device type of a device: the index of its opening and a layout index per trait.
    struct TypeLayout: Sendable {
        var opening: Int
        var traits: [Int]
    }

    private var traits: [TraitLayout] = []
    private var traitIndex: [TraitID: Int] = [:]
    /// The fixed bytes between and after a trait's values, for one set of supported attributes and commands:
    /// `,"attributes":{"onOff":` before the first value, `,"globalSceneControl":` before each next one, and after
    /// the last `}` with `,"attributeInfo":{…},"commands":[…]}`. Segment `j` ends at `ends[j]`; the last is the
    /// closing. A document copies one segment per value instead of a comma, a key and a closing apiece.
    struct TraitPlan: Sendable {
        var attributes: UInt64
        var commands: UInt64
        var bytes: [UInt8]
        var ends: [Int]
    }

    /// Per trait layout, its plans by (supported attributes, supported commands): a trait mirrored from a peer
    /// learns them late, every other keeps one plan.
    private var plans: [[TraitPlan]] = []
    /// `{"type":"DimmableLight","deviceTypeId":257,"isPrimaryType":true,"sourceConnectivity":`
    private var typeOpenings: [[UInt8]] = []
    private var typeOpeningIndex: [TypeOpeningKey: Int] = [:]
    /// What a device type's opening depends on (a key made without building a string for every device).
    private struct TypeOpeningKey: Hashable {
        var name: String
        var isPrimary: Bool
    }
    private var devices: [String: [TypeLayout]] = [:]
    /// Per list of trait types (`DeviceTypeView.traitTypes`, kept alive here so that its identity is not reused), the
    /// trait layouts: a device's first document finds them with one lookup, not one per trait.
    private var traitLayoutsByTypes: [ObjectIdentifier: (traitTypes: any AnyObject & Sendable, layouts: [Int])] = [:]
    /// Per trait layout and attribute, the last list or structure written and its bytes: such values (Scenes
    /// Management's `fabricSceneInfo`) rarely change and cost the most to write, while comparing one with the last is
    /// cheap (the engine shares an unchanged one's storage, which compares equal by identity).
    private var lastWritten: [[(value: Value, bytes: [UInt8])?]] = []
    /// One trait's values while it is written; kept to reuse its storage.
    private var scratch: [Value?] = []
    /// `connectivityFragments()`, made once per process.
    private static let connectivityTable = DocumentWriter.connectivityFragments()
    /// The longest document written so far (a light's is about 4 KB): the next one reserves as much, so it is not
    /// copied while it grows. A document lives until it is queued to the broker.
    private var longest = 2048

    public init() {}

    public mutating func document(_ d: DeviceView) -> [UInt8] {
        let layout = self.layout(of: d)
        var out: [UInt8] = []
        out.reserveCapacity(longest)
        defer { longest = max(longest, min(out.count, 64 * 1024)) }
        Self.raw(#"{"id":"#, &out); JSON.writeString(d.id, to: &out)
        Self.raw(#","name":"#, &out); JSON.writeString(d.name, to: &out)
        Self.raw(#","structureId":"#, &out); Self.optional(d.structureID, &out)
        Self.raw(#","roomId":"#, &out); Self.optional(d.roomID, &out)
        Self.raw(#","isMatterDevice":"#, &out); Self.raw(d.isMatterDevice ? "true" : "false", &out)
        Self.raw(#","sourceConnectivity":"#, &out); Self.connectivity(d.sourceConnectivity, &out)
        Self.raw(#","types":["#, &out)
        for t in layout.indices {
            if t > 0 { Self.raw(",", &out) }
            out.append(contentsOf: typeOpenings[layout[t].opening])
            Self.connectivity(d.sourceConnectivity(type: t), &out)
            Self.raw(#","traits":{"#, &out)
            for k in layout[t].traits.indices {
                if k > 0 { Self.raw(",", &out) }
                write(d, type: t, trait: k, layout: layout[t].traits[k], &out)
            }
            Self.raw("}}", &out)
        }
        Self.raw("]}", &out)
        return out
    }

    private mutating func write(_ d: DeviceView, type t: Int, trait k: Int, layout l: Int, _ out: inout [UInt8]) {
        let layout = traits[l]
        out.append(contentsOf: layout.opening)
        Self.connectivity(d.sourceConnectivity(type: t, trait: k), &out)
        var values: [Value?] = []
        swap(&values, &scratch)
        defer { swap(&values, &scratch) }
        d.readValues(type: t, trait: k, of: layout.ids, into: &values)
        let commands = d.supportedCommands(type: t, trait: k, of: layout.commands)
        let types = layout.types
        guard layout.isCacheable else {
            Self.raw(#","attributes":{"#, &out)
            var first = true
            for i in layout.ids.indices {
                guard let v = values[i] else { continue }
                if !first { Self.raw(",", &out) }
                first = false
                out.append(contentsOf: layout.keys[layout.key(i)])
                write(v, as: types[i], &out)
            }
            Self.raw("}", &out)
            out.append(contentsOf: closing(layout, supported: nil, values: values, commands: commands))
            return
        }
        var supported: UInt64 = 0
        for i in layout.ids.indices where values[i] != nil { supported |= 1 << UInt64(i) }
        let p: Int
        if let known = plans[l].firstIndex(where: { $0.attributes == supported && $0.commands == commands }) {
            p = known
        } else {
            p = plans[l].count
            plans[l].append(plan(layout, supported: supported, commands: commands))
        }
        let plan = plans[l][p]
        plan.bytes.withUnsafeBufferPointer { bytes in
            var start = 0, j = 0
            for i in layout.ids.indices {
                guard let v = values[i] else { continue }
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<plan.ends[j]]))
                start = plan.ends[j]
                j += 1
                switch v {
                case .list, .structure: writeRemembered(v, as: types[i], layout: l, attribute: i, &out)
                default: write(v, as: types[i], &out)
                }
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<plan.ends[j]]))
        }
    }

    /// Writes a list or structure, or copies its bytes when it equals the last one written for this attribute.
    private mutating func writeRemembered(_ v: Value, as type: ValueType, layout l: Int, attribute i: Int,
                                          _ out: inout [UInt8]) {
        if let last = lastWritten[l][i], last.value == v {
            out.append(contentsOf: last.bytes)
            return
        }
        var bytes: [UInt8] = []
        write(v, as: type, &bytes)
        out.append(contentsOf: bytes)
        lastWritten[l][i] = (v, bytes)
    }

    private func plan(_ l: TraitLayout, supported: UInt64, commands: UInt64) -> TraitPlan {
        var bytes: [UInt8] = [], ends: [Int] = []
        Self.raw(#","attributes":{"#, &bytes)
        for i in l.attributes.indices where supported & (1 << UInt64(i)) != 0 {
            if !ends.isEmpty { Self.raw(",", &bytes) }
            bytes.append(contentsOf: l.keys[l.key(i)])
            ends.append(bytes.count)
        }
        Self.raw("}", &bytes)
        bytes.append(contentsOf: closing(l, supported: supported, values: [], commands: commands))
        ends.append(bytes.count)
        return TraitPlan(attributes: supported, commands: commands, bytes: bytes, ends: ends)
    }

    /// The layout of a device, made on its first document (a device's types and traits never change).
    private mutating func layout(of d: DeviceView) -> [TypeLayout] {
        if let known = devices[d.id], known.count == d.typeCount { return known }
        var layout: [TypeLayout] = []
        layout.reserveCapacity(d.typeCount)
        for t in 0..<d.typeCount {
            let type = d.type(t)
            let key = TypeOpeningKey(name: type.name, isPrimary: type.isPrimaryType)
            let opening: Int
            if let known = typeOpeningIndex[key] {
                opening = known
            } else {
                var bytes: [UInt8] = []
                Self.raw(#"{"type":"#, &bytes); JSON.writeString(type.descriptor.name, to: &bytes)
                Self.raw(#","deviceTypeId":"#, &bytes); JSON.writeInt(Int(type.descriptor.id), to: &bytes)
                Self.raw(#","isPrimaryType":"#, &bytes); Self.raw(type.isPrimaryType ? "true" : "false", &bytes)
                Self.raw(#","sourceConnectivity":"#, &bytes)
                opening = typeOpenings.count
                typeOpenings.append(bytes)
                typeOpeningIndex[key] = opening
            }
            let traitTypes = type.traitTypes
            if let known = traitLayoutsByTypes[ObjectIdentifier(traitTypes)] {
                layout.append(TypeLayout(opening: opening, traits: known.layouts))
                continue
            }
            var traitLayouts: [Int] = []
            traitLayouts.reserveCapacity(type.traitCount)
            for k in 0..<type.traitCount {
                let id = type.traitID(k)
                if let known = traitIndex[id] {
                    traitLayouts.append(known)
                } else {
                    let descriptor = type.traitDescriptor(k)
                    traitIndex[id] = traits.count
                    traitLayouts.append(traits.count)
                    traits.append(TraitLayout(descriptor))
                    plans.append([])
                    lastWritten.append(Array(repeating: nil, count: descriptor.attributes.count))
                }
            }
            traitLayoutsByTypes[ObjectIdentifier(traitTypes)] = (traitTypes, traitLayouts)
            layout.append(TypeLayout(opening: opening, traits: traitLayouts))
        }
        devices[d.id] = layout
        return layout
    }

    /// `,"attributeInfo":{…},"commands":[…]}` for one set of supported attributes (the bits of `supported`, or
    /// without them, the non-nil `values`: a trait with more than 64 attributes) and commands.
    private func closing(_ l: TraitLayout, supported: UInt64?, values: [Value?], commands: UInt64) -> [UInt8] {
        var out: [UInt8] = []
        Self.raw(#","attributeInfo":{"#, &out)
        for (i, a) in l.attributes.enumerated() {
            if i > 0 { Self.raw(",", &out) }
            out.append(contentsOf: l.keys[l.key(i)])
            Self.raw(#"{"supported":"#, &out)
            let isSupported = supported.map { i < 64 && $0 & (1 << UInt64(i)) != 0 } ?? (values[i] != nil)
            Self.raw(isSupported ? "true" : "false", &out)
            Self.raw(#","nullable":"#, &out); Self.raw(a.isNullable ? "true" : "false", &out)
            Self.raw(#","writable":"#, &out); Self.raw(a.isWritable ? "true" : "false", &out)
            Self.raw("}", &out)
        }
        Self.raw(#"},"commands":["#, &out)
        var first = true
        for (i, c) in l.commands.enumerated() where i < 64 && commands & (1 << UInt64(i)) != 0 {
            if !first { Self.raw(",", &out) }
            first = false
            JSON.writeString(c.name, to: &out)
        }
        Self.raw("]}", &out)
        return out
    }

    /// `ValueCoding.json(value, as: type).write(to:)` without the intermediate JSON.
    private func write(_ value: Value, as type: ValueType, _ out: inout [UInt8]) {
        switch (value, type) {
        case (.null, _): Self.raw("null", &out)
        case (.bool(let b), _): Self.raw(b ? "true" : "false", &out)
        case (.string(let s), _): JSON.writeString(s, to: &out)
        case (.int(let i), .enumeration(let e)):
            if let name = e.name(of: i) { JSON.writeString(name, to: &out) } else { JSON.writeInt(i, to: &out) }
        case (.int(let i), .bitmap(let b)):
            Self.raw("{", &out)
            for (k, bit) in b.bits.enumerated() {
                if k > 0 { Self.raw(",", &out) }
                JSON.writeString(bit.name, to: &out)
                Self.raw(":", &out)
                Self.raw(i & (1 << bit.bit) != 0 ? "true" : "false", &out)
            }
            Self.raw("}", &out)
        case (.int(let i), _): JSON.writeInt(i, to: &out)
        // Lists and structures are on the hot path too: every light's Groups and Scenes Management attributes
        // (`fabricSceneInfo` is a list of one structure). Written here in `ValueCoding.json`'s order, without
        // building its tree (a quarter of the document's instructions went into the tree).
        case (.structure(let fields), .structure(let t)):
            Self.raw("{", &out)
            var first = true
            for f in t.fields {
                guard let v = fields[f.name] else { continue }
                if !first { Self.raw(",", &out) }
                first = false
                JSON.writeString(f.name, to: &out)
                Self.raw(":", &out)
                write(v, as: f.type, &out)
            }
            if fields.count > t.fields.count || fields.keys.contains(where: { t.field(named: $0) == nil }) {
                for (name, v) in fields.sorted(by: { $0.key < $1.key }) where t.field(named: name) == nil {
                    if !first { Self.raw(",", &out) }
                    first = false
                    JSON.writeString(name, to: &out)
                    Self.raw(":", &out)
                    write(v, as: .bool, &out)
                }
            }
            Self.raw("}", &out)
        case (.list(let items), .list(let element, _)):
            Self.raw("[", &out)
            for (k, item) in items.enumerated() {
                if k > 0 { Self.raw(",", &out) }
                write(item, as: element, &out)
            }
            Self.raw("]", &out)
        case (.structure, _), (.list, _): ValueCoding.json(value, as: type).write(to: &out)  // not of its declared type
        }
    }

    /// Appends a literal without making an array of it.
    static func raw(_ s: StaticString, _ out: inout [UInt8]) {
        out.append(contentsOf: UnsafeBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount))
    }

    /// A string, or `null`; the summary writer and the peers' entries use it too.
    static func optional(_ s: String?, _ out: inout [UInt8]) {
        if let s { JSON.writeString(s, to: &out) } else { Self.raw("null", &out) }
    }

    /// A document holds one connectivity object per device, type and trait (nine in a DimmableLight's), and they
    /// take 20 values in all: each is copied from `connectivityTable`, written once. The summary writer and the
    /// peers' entries of the whole home use it too.
    static func connectivity(_ c: SourceConnectivity, _ out: inout [UInt8]) {
        out.append(contentsOf: connectivityTable[connectivityIndex(c)])
    }

    private static func connectivityIndex(_ c: SourceConnectivity) -> Int {
        let state = switch c.connectivityState {
        case .unknown: 0
        case .online: 1
        case .offline: 2
        case .partiallyOnline: 3
        }
        let locality = switch c.dataSourceLocality {
        case .unspecified: 0
        case .direct: 1
        case .localPeer: 2
        case .remote: 3
        case .mixed: 4
        }
        return state * 5 + locality
    }

    /// `{"connectivityState":"online","dataSourceLocality":"direct"}` and the others, by `connectivityIndex`.
    private static func connectivityFragments() -> [[UInt8]] {
        var all = [[UInt8]](repeating: [], count: 20)
        for state in ConnectivityState.allCases {
            for locality in DataSourceLocality.allCases {
                let c = SourceConnectivity(state, locality)
                var out: [UInt8] = []
                raw(#"{"connectivityState":"#, &out)
                JSON.writeString(c.connectivityState.rawValue, to: &out)
                raw(#","dataSourceLocality":"#, &out)
                JSON.writeString(c.dataSourceLocality.rawValue, to: &out)
                raw("}", &out)
                all[connectivityIndex(c)] = out
            }
        }
        return all
    }
}
