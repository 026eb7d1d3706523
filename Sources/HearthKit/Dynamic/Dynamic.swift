// The untyped layer: device types and traits read by name, values as JSON, commands and writes by name. The typed
// layer (Generated/) wraps it; tools that must handle any trait a hub may serve (the `hearth` CLI) use it directly.
/// A device type, untyped: its hub name, Matter id, metadata and traits.
public struct DynamicDeviceType: Sendable, Hashable {
    /// UpperCamelCase, as the hub names it (`DimmableLight`).
    public let name: String
    public let deviceTypeID: UInt32?
    public let metadata: DeviceTypeMetadata
    public let traits: DeviceTypeTraits
    /// The type's part of the device document.
    public let json: JSON
    let route: Route

    init(json: JSON, route: Route) {
        name = json["type"]?.stringValue ?? ""
        deviceTypeID = json["deviceTypeId"]?.intValue.flatMap(UInt32.init(exactly:))
        metadata = DeviceTypeMetadata(
            isPrimaryType: json["isPrimaryType"]?.boolValue ?? false,
            sourceConnectivity: SourceConnectivity(json: json["sourceConnectivity"]))
        traits = DeviceTypeTraits(
            all: json["traits"]?.members.map { DynamicTrait(name: $0.key, json: $0.value, route: route) } ?? [])
        self.json = json
        self.route = route
    }

    public static func == (a: DynamicDeviceType, b: DynamicDeviceType) -> Bool {
        a.route.hub == b.route.hub && a.route.device == b.route.device && a.json == b.json
    }
    public func hash(into hasher: inout Hasher) { hasher.combine(json) }

    /// The generated Swift type for this device type, when this version of HearthKit knows it.
    public var typed: (any DeviceType)? {
        GeneratedCatalogue.deviceTypes.first { $0.identifier == name }.map { $0.init(self) }
    }
}

/// A device type's traits (`deviceType.traits`): by Swift type, by name, or all.
public struct DeviceTypeTraits: Sendable, Hashable, RandomAccessCollection {
    public let all: [DynamicTrait]

    public var startIndex: Int { all.startIndex }
    public var endIndex: Int { all.endIndex }
    public subscript(position: Int) -> DynamicTrait { all[position] }

    /// The trait, or nil when this device type does not have it (`traits[Matter.OnOffTrait.self]`).
    public subscript<T: Trait>(_ trait: T.Type) -> T? { self[named: T.identifier].map(T.init) }

    public func contains<T: Trait>(_ trait: T.Type) -> Bool { self[named: T.identifier] != nil }

    /// A trait by its hub name: `onOff` (also `matter.onOff`) or a maker's `com.example.spinner`.
    public subscript(named name: String) -> DynamicTrait? {
        let key = name.hasPrefix("matter.") ? String(name.dropFirst("matter.".count)) : name
        return all.first { $0.name == key }
    }
}

/// A trait, untyped: attribute values as JSON (enums by name, bitmaps as objects of flags), commands by name.
public struct DynamicTrait: Sendable, Hashable {
    /// The hub's name: `onOff` for a Matter trait, `dev.hearth.simulatedSwitch` for a maker's.
    public let name: String
    /// `matter`, or the maker's package (`dev.hearth`).
    public let namespace: String
    public let clusterID: UInt32?
    public let metadata: TraitMetadata
    /// The commands this trait instance takes (an Off-only relay lists only `off`).
    public let commands: [String]
    /// The trait's part of the device document.
    public let json: JSON
    let route: Route

    init(name: String, json: JSON, route: Route) {
        self.name = name
        namespace = json["namespace"]?.stringValue ?? "matter"
        clusterID = json["clusterId"]?.intValue.flatMap(UInt32.init(exactly:))
        metadata = TraitMetadata(sourceConnectivity: SourceConnectivity(json: json["sourceConnectivity"]))
        commands = json["commands"]?.arrayValue.compactMap(\.stringValue) ?? []
        self.json = json
        self.route = route
    }

    public static func == (a: DynamicTrait, b: DynamicTrait) -> Bool {
        a.name == b.name && a.route.hub == b.route.hub && a.route.device == b.route.device
            && a.route.type == b.route.type
            && a.json == b.json
    }
    public func hash(into hasher: inout Hasher) { hasher.combine(json) }

    /// The device this trait belongs to, and the device type it is read through.
    public var deviceID: String { route.device }
    public var deviceTypeName: String { route.type }

    /// Every attribute of the trait, supported or not, in the hub's order.
    public var attributeNames: [String] { json["attributeInfo"]?.members.map(\.key) ?? [] }

    /// The attribute's value (`.null` for a real null), or nil when the device does not support it.
    public func value(_ attribute: String) -> JSON? { json["attributes"]?[attribute] }

    /// Whether the device reports this attribute.
    public func isSupported(_ attribute: String) -> Bool {
        json["attributeInfo"]?[attribute]?["supported"]?.boolValue ?? (value(attribute) != nil)
    }

    /// Whether null is a legal value of this attribute.
    public func isNullable(_ attribute: String) -> Bool {
        json["attributeInfo"]?[attribute]?["nullable"]?.boolValue ?? false
    }

    /// Whether `update` may set this attribute.
    public func isWritable(_ attribute: String) -> Bool {
        json["attributeInfo"]?[attribute]?["writable"]?.boolValue ?? false
    }

    /// Whether this trait instance takes the command.
    public func supports(command: String) -> Bool { commands.contains(command) }

    /// Sends a command with its fields by name (values as the hub reads them: enums by name, bitmaps as objects of
    /// flags) and returns what the hub returned, if anything. The hub checks every field.
    ///
    /// - Throws: ``HomeError``: the hub's refusal, `unavailable` at once for an offline trait,
    ///   `deadlineExceeded` when no hub answers.
    @discardableResult
    public func invoke(_ command: String, _ fields: [(key: String, value: JSON)] = []) async throws -> JSON? {
        var members: [(key: String, value: JSON)] = [("type", .string(route.type)), ("trait", .string(name)),
                                                     ("command", .string(command))]
        if !fields.isEmpty { members.append(("args", .object(fields))) }
        return try await route.home.perform(members, device: route.device, owner: route.hub,
                                            .trait(type: route.type, trait: name)).result
    }

    /// Writes attributes (all or none) and returns the trait as it is after the write.
    @discardableResult
    public func update(_ attributes: [(key: String, value: JSON)]) async throws -> DynamicTrait {
        let members: [(key: String, value: JSON)] = [
            ("type", .string(route.type)), ("trait", .string(name)),
            ("update", .object(attributes))
        ]
        _ = try await route.home.perform(
            members, device: route.device, owner: route.hub, .trait(type: route.type, trait: name))
        return route.home.current(route.device, hub: route.hub)?.types[named: route.type]?.traits[named: name] ?? self
    }

    /// The generated Swift type for this trait, when this version of HearthKit knows it.
    public var typed: (any Trait)? {
        GeneratedCatalogue.traits.first { $0.identifier == name }.map { $0.init(self) }
    }
}
