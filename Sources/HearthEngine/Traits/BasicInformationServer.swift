public import HearthModel

/// Matter BasicInformation (0x0028): who made the device and what it is, from the configuration.
/// NodeLabel is the one attribute a client writes; it survives restarts.
public struct BasicInformationServer: TraitServer {
    public enum Attribute {
        public static let vendorName = AttributeDescriptor(id: 0x0001, name: "vendorName", type: .string(maxLength: 32))
        public static let vendorID = AttributeDescriptor(id: 0x0002, name: "vendorID", type: .uint16)
        public static let productName = AttributeDescriptor(
            id: 0x0003, name: "productName", type: .string(maxLength: 32))
        public static let productID = AttributeDescriptor(id: 0x0004, name: "productID", type: .uint16)
        public static let nodeLabel = AttributeDescriptor(
            id: 0x0005, name: "nodeLabel", type: .string(maxLength: 32),
            writable: true, nonVolatile: true)
        public static let hardwareVersionString = AttributeDescriptor(
            id: 0x0008, name: "hardwareVersionString",
            type: .string(maxLength: 64))
        public static let softwareVersionString = AttributeDescriptor(
            id: 0x000A, name: "softwareVersionString",
            type: .string(maxLength: 64))
        public static let serialNumber = AttributeDescriptor(
            id: 0x000F, name: "serialNumber", type: .string(maxLength: 32))
        public static let reachable = AttributeDescriptor(id: 0x0011, name: "reachable", type: .bool)
        public static let uniqueID = AttributeDescriptor(id: 0x0012, name: "uniqueID", type: .string(maxLength: 32))
    }

    public static let descriptor = TraitDescriptor(
        id: .basicInformation, clusterID: 0x0028, revision: 4,
        attributes: [Attribute.vendorName, Attribute.vendorID, Attribute.productName, Attribute.productID,
                     Attribute.nodeLabel, Attribute.hardwareVersionString, Attribute.softwareVersionString,
                     Attribute.serialNumber, Attribute.reachable, Attribute.uniqueID])

    /// The software version every device of this hub reports unless configured otherwise.
    public static let hearthVersion = "0.1.0"

    /// What a device reports unless its configuration or saved state says otherwise: the same for every device, so
    /// it is kept once, not per device (a dictionary of eight values was half a kilobyte of every device's memory).
    private static let defaults: [UInt32: Value] = [
        Attribute.vendorName.id: .string("Hearth"),
        Attribute.vendorID.id: .int(0xFFF1),  // a test vendor id: Hearth has no CSA vendor id
        Attribute.productName.id: .string("Hearth device"),
        Attribute.productID.id: .int(0x8000),
        Attribute.nodeLabel.id: .string(""),
        Attribute.hardwareVersionString.id: .string("1"),
        Attribute.softwareVersionString.id: .string(hearthVersion),
        Attribute.reachable.id: .bool(true),
    ]
    /// The values configured or loaded for this device, over `defaults`; empty (no storage) for most devices.
    private var values: [UInt32: Value] = [:]

    public init(features: Set<String>) throws(HomeError) {
        if let f = features.first { throw .constraintError("basicInformation has no feature '\(f)'") }
    }

    /// Serial number and unique id are optional: unsupported until configured.
    public func read(_ id: UInt32) -> Value? { values[id] ?? Self.defaults[id] }

    public mutating func load(_ attribute: AttributeDescriptor, _ value: Value) throws(HomeError) {
        guard Self.descriptor.attribute(id: attribute.id) != nil else { throw Self.unknownAttribute(attribute) }
        if attribute.id == Attribute.hardwareVersionString.id || attribute.id == Attribute.softwareVersionString.id,
           value.stringValue?.isEmpty == true {
            throw .constraintError("\(attribute.name) must have 1 to 64 bytes")
        }
        // A value equal to the default is not kept: most configurations repeat the defaults.
        values[attribute.id] = value == Self.defaults[attribute.id] ? nil : value
    }
}
