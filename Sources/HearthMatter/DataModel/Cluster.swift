// What a cluster server is to the Interaction Model: its id, revision and features, its attributes and commands with
// their qualities and privileges, and the three things it does (read, write, invoke). Root-node clusters implement it
// by hand; a bridged device's clusters will implement it from the engine's descriptors, so the Interaction Model never
// needs to know which is which.

/// An attribute's qualities (Matter 1.4 §7.7).
public struct AttributeQualities: OptionSet, Sendable, Hashable {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    public static let writable = AttributeQualities(rawValue: 1 << 0)
    public static let nullable = AttributeQualities(rawValue: 1 << 1)
    /// A list of fabric-scoped structs: a read filtered by fabric sees its own fabric's, a write replaces only them.
    public static let fabricScoped = AttributeQualities(rawValue: 1 << 2)
    public static let list = AttributeQualities(rawValue: 1 << 3)
    /// Never changes while the node runs (the F quality): skipped by wildcards that ask to skip fixed attributes.
    public static let fixed = AttributeQualities(rawValue: 1 << 4)
    /// Survives a restart (the N quality).
    public static let nonVolatile = AttributeQualities(rawValue: 1 << 5)
    /// A write must be timed (the T quality).
    public static let timedWrite = AttributeQualities(rawValue: 1 << 6)
}

/// One attribute of a cluster.
public struct AttributeDefinition: Sendable, Hashable {
    public var id: AttributeID
    public var name: String
    public var qualities: AttributeQualities
    public var readPrivilege: Privilege
    public var writePrivilege: Privilege

    public init(_ id: AttributeID, _ name: String, _ qualities: AttributeQualities = [],
                read: Privilege = .view, write: Privilege = .operate) {
        self.id = id
        self.name = name
        self.qualities = qualities
        self.readPrivilege = read
        self.writePrivilege = write
    }

    public var isWritable: Bool { qualities.contains(.writable) }
    public var isList: Bool { qualities.contains(.list) }
}

/// One command a cluster accepts.
public struct CommandDefinition: Sendable, Hashable {
    public var id: CommandID
    public var name: String
    public var privilege: Privilege
    public var requiresTimedInvoke: Bool
    /// The command that answers it, or nil for a plain status.
    public var response: CommandID?

    public init(_ id: CommandID, _ name: String, privilege: Privilege = .operate, timed: Bool = false,
                response: CommandID? = nil) {
        self.id = id
        self.name = name
        self.privilege = privilege
        self.requiresTimedInvoke = timed
        self.response = response
    }
}

/// The global attributes every cluster has (Matter 1.4 §7.13), read from the cluster's definition by the data model.
public enum GlobalAttribute {
    public static let generatedCommandList: AttributeID = 0xFFF8
    public static let acceptedCommandList: AttributeID = 0xFFF9
    public static let attributeList: AttributeID = 0xFFFB
    public static let featureMap: AttributeID = 0xFFFC
    public static let clusterRevision: AttributeID = 0xFFFD

    static let definitions: [AttributeDefinition] = [
        AttributeDefinition(generatedCommandList, "GeneratedCommandList", [.list, .fixed]),
        AttributeDefinition(acceptedCommandList, "AcceptedCommandList", [.list, .fixed]),
        AttributeDefinition(attributeList, "AttributeList", [.list, .fixed]),
        AttributeDefinition(featureMap, "FeatureMap", [.fixed]),
        AttributeDefinition(clusterRevision, "ClusterRevision", [.fixed]),
    ]
}

/// What a read knows about who asks.
public struct ReadContext: Sendable {
    public var subject: SubjectDescriptor
    /// Whether fabric-scoped lists show only the subject's fabric (the request's FabricFiltered).
    public var isFabricFiltered: Bool

    public init(subject: SubjectDescriptor, isFabricFiltered: Bool) {
        self.subject = subject
        self.isFabricFiltered = isFabricFiltered
    }
}

/// What a write or invoke knows: who asks, when, on which endpoint, and whether it arrived timed.
public struct ActionContext: Sendable {
    public var subject: SubjectDescriptor
    public var endpoint: EndpointID
    public var now: MatterInstant
    public var isTimed: Bool

    public init(subject: SubjectDescriptor, endpoint: EndpointID, now: MatterInstant, isTimed: Bool = false) {
        self.subject = subject
        self.endpoint = endpoint
        self.now = now
        self.isTimed = isTimed
    }
}

/// What an invoke answers: success, a response command with fields, or (thrown) an `IMError`.
public enum CommandResult: Sendable, Equatable {
    case success
    case response(CommandID, TLVElement)
}

/// A cluster instance on an endpoint.
///
/// The data model checks existence and privileges and answers the global attributes before calling it; the
/// server checks values. An implementation is called from one thread at a time (the node's), but must be
/// `Sendable`: its state sits behind a lock of its own, or is the shared state it points at.
public protocol ClusterServer: AnyObject, Sendable {
    var id: ClusterID { get }
    var revision: UInt16 { get }
    var featureMap: UInt32 { get }
    /// The attributes beyond the global ones, in id order.
    var attributes: [AttributeDefinition] { get }
    var acceptedCommands: [CommandDefinition] { get }
    var generatedCommands: [CommandID] { get }
    /// The events the cluster can emit (`DataModel.emitEvent`).
    var events: [EventDefinition] { get }

    /// The attribute's value; fabric-scoped lists filtered as `context` asks.
    func read(_ attribute: AttributeID, context: ReadContext) throws(IMError) -> TLVValue
    /// Writes a whole value (a list write arrives here as the whole list). Throws without changing anything on refusal;
    /// returns the attributes it changed (their cluster's DataVersion moves).
    func write(_ attribute: AttributeID, value: TLVValue, context: ActionContext) throws(IMError)
    /// Runs a command; `fields` is its CommandFields structure (nil when the request had none).
    func invoke(_ command: CommandID, fields: TLVElement?, context: ActionContext) throws(IMError) -> CommandResult
}

extension ClusterServer {
    public var featureMap: UInt32 { 0 }
    public var acceptedCommands: [CommandDefinition] { [] }
    public var generatedCommands: [CommandID] { [] }
    public var events: [EventDefinition] { [] }

    public func write(_ attribute: AttributeID, value: TLVValue, context: ActionContext) throws(IMError) {
        throw IMError(.unsupportedWrite, "attribute 0x\(String(attribute, radix: 16)) is not writable")
    }

    public func invoke(_ command: CommandID, fields: TLVElement?, context: ActionContext) throws(IMError)
        -> CommandResult
    {
        throw IMError(.unsupportedCommand, "command 0x\(String(command, radix: 16)) is not supported")
    }

    func attributeDefinition(_ id: AttributeID) -> AttributeDefinition? {
        attributes.first { $0.id == id } ?? GlobalAttribute.definitions.first { $0.id == id }
    }

    /// Every attribute, the global ones last, as AttributeList lists them.
    var allAttributes: [AttributeDefinition] { attributes + GlobalAttribute.definitions }
}

/// A device type an endpoint has, with its revision (DeviceTypeStruct).
public struct DeviceTypeRevision: Sendable, Hashable {
    public var deviceType: UInt32
    public var revision: UInt16

    public init(_ deviceType: UInt32, revision: UInt16) {
        self.deviceType = deviceType
        self.revision = revision
    }

    public static let rootNode = DeviceTypeRevision(0x0016, revision: 3)
    public static let aggregator = DeviceTypeRevision(0x000E, revision: 1)
    public static let bridgedNode = DeviceTypeRevision(0x0013, revision: 3)
}
