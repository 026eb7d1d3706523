public import HearthJSON
public import HearthModel

/// The JSON documents a hub publishes: one per device and a summary of all.
public enum DeviceDocument {
    public static func connectivity(_ c: SourceConnectivity) -> JSON {
        .object([("connectivityState", .string(c.connectivityState.rawValue)),
                 ("dataSourceLocality", .string(c.dataSourceLocality.rawValue))])
    }

    public static func optional(_ s: String?) -> JSON { s.map(JSON.string) ?? .null }

    public static func header(_ d: HomeDevice, hub: String?) -> [(key: String, value: JSON)] {
        var members: [(key: String, value: JSON)] = [
            ("id", .string(d.id)), ("name", .string(d.name)),
            ("structureId", optional(d.structureID)), ("roomId", optional(d.roomID)),
            ("isMatterDevice", .bool(d.isMatterDevice)),
        ]
        if let hub { members.append(("hub", .string(hub))) }
        return members
    }

    /// The summary of one device for the `devices` list.
    public static func summary(_ d: HomeDevice, hub: String? = nil) -> JSON {
        .object(header(d, hub: hub) + [
            ("types", .array(d.types.map { t in
                .object([("type", .string(t.descriptor.name)), ("deviceTypeId", .int(Int(t.descriptor.id))),
                         ("isPrimaryType", .bool(t.metadata.isPrimaryType))])
            })),
            ("sourceConnectivity", connectivity(d.sourceConnectivity)),
        ])
    }

    /// The whole document of one device.
    public static func document(_ d: HomeDevice, hub: String? = nil) -> JSON {
        .object(header(d, hub: hub) + [
            ("sourceConnectivity", connectivity(d.sourceConnectivity)),
            ("types", .array(d.types.map(type))),
        ])
    }

    static func type(_ t: DeviceTypeSnapshot) -> JSON {
        .object([
            ("type", .string(t.descriptor.name)), ("deviceTypeId", .int(Int(t.descriptor.id))),
            ("isPrimaryType", .bool(t.metadata.isPrimaryType)),
            ("sourceConnectivity", connectivity(t.sourceConnectivity)),
            ("traits", .object(t.traits.map { (key: $0.descriptor.id.qualifiedName, value: trait($0)) })),
        ])
    }

    static func trait(_ t: TraitSnapshot) -> JSON {
        var attributes: [(key: String, value: JSON)] = []
        var info: [(key: String, value: JSON)] = []
        for reading in t.attributes {
            let a = reading.descriptor
            if let v = reading.value { attributes.append((a.name, ValueCoding.json(v, as: a.type))) }
            info.append((a.name, .object([("supported", .bool(reading.isSupported)), ("nullable", .bool(a.isNullable)),
                                          ("writable", .bool(a.isWritable))])))
        }
        return .object([
            ("namespace", .string(t.descriptor.id.namespace)), ("clusterId", .int(Int(t.descriptor.clusterID))),
            ("sourceConnectivity", connectivity(t.sourceConnectivity)),
            ("attributes", .object(attributes)), ("attributeInfo", .object(info)),
            ("commands", .array(t.supportedCommands.map(JSON.string))),
        ])
    }
}
