public import HearthModel

/// A device as the hub's configuration describes it (already parsed; files are the daemon's job).
public struct DeviceConfiguration: Sendable {
    public var id: String
    public var name: String
    public var structureID: String?
    public var roomID: String?
    public var isMatterDevice: Bool
    public var types: [DeviceTypeConfiguration]

    public init(id: String, name: String, structureID: String? = nil, roomID: String? = nil,
                isMatterDevice: Bool = false, types: [DeviceTypeConfiguration]) {
        self.id = id
        self.name = name
        self.structureID = structureID
        self.roomID = roomID
        self.isMatterDevice = isMatterDevice
        self.types = types
    }
}

/// One device type of a device, with the traits it has beyond the type's required ones.
public struct DeviceTypeConfiguration: Sendable {
    public var type: DeviceTypeDescriptor
    /// `nil`: the first type of the device is the primary one.
    public var isPrimary: Bool?
    /// Traits with their features and attribute values; a required trait left out is added with defaults.
    public var traits: [TraitConfiguration]
    /// What drives the hardware (a relay, a dimmer); `nil` for pure inputs and mirrors.
    public var actuator: (any EndpointActuator)?
    /// The type is another hub's: its traits hold what the owner publishes (`TraitInput.mirror`) and
    /// start as not heard from.
    public var isMirrored: Bool

    public init(_ type: DeviceTypeDescriptor, isPrimary: Bool? = nil, traits: [TraitConfiguration] = [],
                actuator: (any EndpointActuator)? = nil, isMirrored: Bool = false) {
        self.type = type
        self.isPrimary = isPrimary
        self.traits = traits
        self.actuator = actuator
        self.isMirrored = isMirrored
    }
}

/// One trait's features, configured attribute values and initial connectivity.
public struct TraitConfiguration: Sendable {
    public var id: TraitID
    public var features: Set<String>
    /// By attribute name; loaded before saved state, so a user's later writes win over the file.
    public var attributes: [String: Value]
    public var connectivity: SourceConnectivity
    /// The configured part of the trait's table (groups from `hearth.yaml`), in the form ``TraitServer/table`` has;
    /// saved entries are restored over it.
    public var table: Value?

    public init(_ id: TraitID, features: Set<String> = [], attributes: [String: Value] = [:],
                connectivity: SourceConnectivity = .directOnline, table: Value? = nil) {
        self.id = id
        self.features = features
        self.attributes = attributes
        self.connectivity = connectivity
        self.table = table
    }
}

/// What a device saved: user metadata and persistent attribute values, keyed by type and trait.
public struct SavedDevice: Sendable, Hashable, Codable {
    public var name: String?
    public var structureID: String?
    public var roomID: String?
    /// `[deviceTypeName: [traitQualifiedName: [attributeName: Value]]]`
    public var attributes: [String: [String: [String: SavedValue]]]
    /// `[deviceTypeName: [traitQualifiedName: table]]`: what traits keep that is no attribute (``TraitServer/table``).
    public var tables: [String: [String: SavedValue]]

    public init(name: String? = nil, structureID: String? = nil, roomID: String? = nil,
                attributes: [String: [String: [String: SavedValue]]] = [:],
                tables: [String: [String: SavedValue]] = [:]) {
        self.name = name
        self.structureID = structureID
        self.roomID = roomID
        self.attributes = attributes
        self.tables = tables
    }

    private enum CodingKeys: String, CodingKey { case name, structureID, roomID, attributes, tables }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        name = try c.decodeIfPresent(String.self, forKey: .name)
        structureID = try c.decodeIfPresent(String.self, forKey: .structureID)
        roomID = try c.decodeIfPresent(String.self, forKey: .roomID)
        attributes = try c.decode([String: [String: [String: SavedValue]]].self, forKey: .attributes)
        // Files written before tables existed have none.
        tables = try c.decodeIfPresent([String: [String: SavedValue]].self, forKey: .tables) ?? [:]
    }
}

/// A `Value` in a form that round-trips through any Codable format.
public enum SavedValue: Sendable, Hashable, Codable {
    case null, bool(Bool), int(Int), string(String)
    /// A struct's fields by name.
    indirect case structure([String: SavedValue])
    /// A list's elements in order.
    indirect case list([SavedValue])

    public init(_ value: Value) {
        switch value {
        case .null: self = .null
        case .bool(let b): self = .bool(b)
        case .int(let i): self = .int(i)
        case .string(let s): self = .string(s)
        case .structure(let f): self = .structure(f.mapValues(SavedValue.init))
        case .list(let l): self = .list(l.map(SavedValue.init))
        }
    }

    public var value: Value {
        switch self {
        case .null: .null
        case .bool(let b): .bool(b)
        case .int(let i): .int(i)
        case .string(let s): .string(s)
        case .structure(let f): .structure(f.mapValues(\.value))
        case .list(let l): .list(l.map(\.value))
        }
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() { self = .null }
        else if let b = try? c.decode(Bool.self) { self = .bool(b) }
        else if let i = try? c.decode(Int.self) { self = .int(i) }
        else if let f = try? c.decode([String: SavedValue].self) { self = .structure(f) }
        else if let l = try? c.decode([SavedValue].self) { self = .list(l) }
        else { self = .string(try c.decode(String.self)) }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .null: try c.encodeNil()
        case .bool(let b): try c.encode(b)
        case .int(let i): try c.encode(i)
        case .string(let s): try c.encode(s)
        case .structure(let f): try c.encode(f)
        case .list(let l): try c.encode(l)
        }
    }
}

/// Drives an endpoint's hardware from its rendered output.
///
/// The engine calls it outside its lock, with the device's gate held, on every change and on every transition
/// step (those from the device's lane): calls for one device never overlap, and it may block — only that device
/// waits. It must not call back into the `Home` for the same device (the gate is not re-entrant). A throw during
/// a command undoes the command; during a timer step it is left to the actuator to report its fault.
public protocol EndpointActuator: Sendable {
    func drive(_ output: EndpointOutput) throws(HomeError)
}

/// Tuning of the engine.
public struct EngineOptions: Sendable {
    /// Output steps per second during transitions.
    public var stepsPerSecond: Int = 50

    public init(stepsPerSecond: Int = 50) { self.stepsPerSecond = stepsPerSecond }

    var stepInterval: Int64 { Int64(max(1, 1000 / max(1, stepsPerSecond))) }
}
