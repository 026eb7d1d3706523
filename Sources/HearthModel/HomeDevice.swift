/// A device as a client sees it at one moment: a snapshot, never a live object.
public struct HomeDevice: Sendable, Hashable, Identifiable {
    public var id: String
    public var name: String
    public var structureID: String?
    public var roomID: String?
    public var isMatterDevice: Bool
    public var types: [DeviceTypeSnapshot]
    public var sourceConnectivity: SourceConnectivity

    public init(id: String, name: String, structureID: String?, roomID: String?, isMatterDevice: Bool,
                types: [DeviceTypeSnapshot]) {
        self.id = id
        self.name = name
        self.structureID = structureID
        self.roomID = roomID
        self.isMatterDevice = isMatterDevice
        self.types = types
        self.sourceConnectivity = .aggregate(types.map(\.sourceConnectivity))
    }

    /// The most code points a name keeps; longer names are cut, never refused (Home APIs' `setName`).
    public static let maximumNameLength = 60

    /// Cuts a name to at most 60 Unicode code points: scalars, not bytes and not grapheme clusters.
    public static func truncatedName(_ name: String) -> String {
        let scalars = name.unicodeScalars
        guard let end = scalars.index(scalars.startIndex, offsetBy: maximumNameLength, limitedBy: scalars.endIndex),
              end != scalars.endIndex else { return name }
        var view = String.UnicodeScalarView()
        view.append(contentsOf: scalars[..<end])
        return String(view)
    }

    public var primaryType: DeviceTypeSnapshot? { types.first { $0.metadata.isPrimaryType } }

    /// The device type with this name, e.g. `DimmableLight`.
    public func type(named name: String) -> DeviceTypeSnapshot? { types.first { $0.descriptor.name == name } }

    /// The first trait with this id among the device's types.
    public func trait(_ id: TraitID) -> TraitSnapshot? {
        for type in types { if let t = type.trait(id) { return t } }
        return nil
    }
}

/// One device type of a device (a Matter endpoint).
public struct DeviceTypeSnapshot: Sendable, Hashable {
    public struct Metadata: Sendable, Hashable {
        public var isPrimaryType: Bool
        public var sourceConnectivity: SourceConnectivity
    }

    public var descriptor: DeviceTypeDescriptor
    public var metadata: Metadata
    public var traits: [TraitSnapshot]
    public var sourceConnectivity: SourceConnectivity { metadata.sourceConnectivity }

    public init(descriptor: DeviceTypeDescriptor, isPrimaryType: Bool, traits: [TraitSnapshot]) {
        self.descriptor = descriptor
        self.traits = traits
        self.metadata = Metadata(isPrimaryType: isPrimaryType,
                                 sourceConnectivity: .aggregate(traits.map(\.sourceConnectivity)))
    }

    public func trait(_ id: TraitID) -> TraitSnapshot? { traits.first { $0.descriptor.id == id } }
}

/// One trait of a device type: its attributes' values, which commands it takes, and its source.
public struct TraitSnapshot: Sendable, Hashable {
    public var descriptor: TraitDescriptor
    /// In the order of the descriptor's attributes; an unsupported attribute reads as not supported.
    public var attributes: [AttributeReading]
    public var supportedCommands: [String]
    public var sourceConnectivity: SourceConnectivity

    public init(descriptor: TraitDescriptor, attributes: [AttributeReading], supportedCommands: [String],
                sourceConnectivity: SourceConnectivity) {
        self.descriptor = descriptor
        self.attributes = attributes
        self.supportedCommands = supportedCommands
        self.sourceConnectivity = sourceConnectivity
    }

    public subscript(_ attribute: String) -> AttributeReading? { attributes.first { $0.descriptor.name == attribute } }

    /// Whether this trait instance takes the command (the Home APIs' `supports<Name>Command`).
    public func supports(_ command: String) -> Bool { supportedCommands.contains(command) }
}

/// One attribute's reading. A client tells "not supported" (`isSupported == false`, no value) from a
/// real null (`isSupported && isNullable`, value `.null`).
public struct AttributeReading: Sendable, Hashable {
    public var descriptor: AttributeDescriptor
    /// `nil` exactly when the attribute is not supported.
    public var value: Value?

    public init(descriptor: AttributeDescriptor, value: Value?) {
        self.descriptor = descriptor
        self.value = value
    }

    public var isSupported: Bool { value != nil }
    public var isNullable: Bool { descriptor.isNullable }
    public var isWritable: Bool { descriptor.isWritable }
}
