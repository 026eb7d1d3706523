// The clusters of a bridged device, made from the engine's descriptors with no table of their own: one cluster per
// trait (its id, revision, features, attributes, commands and events are the trait's), and
// BridgedDeviceBasicInformation for the device itself. Reads come from the engine's current state; commands and writes
// go through the door (the path an MQTT request takes: the device's lane, the engine's checks) and answer when it has
// run.

import HearthCrypto
import HearthEngine
import HearthMatter
public import HearthModel

/// How a bridged cluster acts on the home: the same requests an MQTT client sends, answered to a callback.
public protocol BridgeDoor: Sendable {
    /// Runs a command as an MQTT request does; `reply` is called once, on any thread, with the command's response
    /// fields (nil for a plain status) or the refusal.
    func invoke(device: String, type: String, trait: TraitID, command: String, arguments: [String: Value],
                reply: @escaping @Sendable (Result<[String: Value]?, HomeError>) -> Void)
    /// Writes attributes as an MQTT `update` does: all or none.
    func update(device: String, type: String, trait: TraitID, attributes: [String: Value],
                reply: @escaping @Sendable (HomeError?) -> Void)
    /// Renames the device as an MQTT `setName` does.
    func rename(device: String, to name: String, reply: @escaping @Sendable (HomeError?) -> Void)
}

/// Where a bridged cluster's device is: its id, and its type and trait by position in the engine.
struct BridgedPlace: Sendable {
    var home: Home
    var deviceID: String
    var typeIndex: Int
    var typeName: String

    func view() -> DeviceView? { try? home.view(deviceID) }
}

/// A trait of a device as a Matter cluster.
final class BridgedTraitCluster: DeferredClusterServer {
    let id: ClusterID
    let revision: UInt16
    let featureMap: UInt32
    let attributes: [AttributeDefinition]
    let acceptedCommands: [CommandDefinition]
    let generatedCommands: [CommandID]
    let events: [EventDefinition]

    private let place: BridgedPlace
    private let traitIndex: Int
    private let descriptor: TraitDescriptor
    private let door: any BridgeDoor

    /// The cluster for trait `traitIndex` of the device's type, with the attributes and commands this instance has.
    init(place: BridgedPlace, traitIndex: Int, device: DeviceView, door: any BridgeDoor) {
        let view = device.type(place.typeIndex)
        let descriptor = view.traitDescriptor(traitIndex)
        self.place = place
        self.traitIndex = traitIndex
        self.descriptor = descriptor
        self.door = door
        id = descriptor.clusterID
        revision = descriptor.revision
        featureMap = view.featureMap(traitIndex)
        // The global attributes are the data model's; the rest are those this instance supports.
        attributes = descriptor.attributes
            .filter { $0.id < 0xF000 && view.value(trait: traitIndex, attribute: $0.id) != nil }
            .sorted { $0.id < $1.id }
            .map(Self.definition)
        let bits = device.supportedCommands(type: place.typeIndex, trait: traitIndex, of: descriptor.commands)
        let supported = descriptor.commands.enumerated().filter { n, _ in n < 64 && bits & 1 << UInt64(n) != 0 }
            .map(\.element)
        // A command with response fields is answered by the response command of the same id (Groups' and Scenes
        // Management's …Response commands are numbered as their requests).
        acceptedCommands = supported.map { command in
            CommandDefinition(command.id, command.name, response: command.response.isEmpty ? nil : command.id)
        }
        generatedCommands = supported.filter { !$0.response.isEmpty }.map(\.id)
        events = descriptor.events.map { EventDefinition($0.id, $0.name) }
    }

    static func definition(_ attribute: AttributeDescriptor) -> AttributeDefinition {
        var qualities: AttributeQualities = []
        if attribute.isWritable { qualities.insert(.writable) }
        if attribute.isNullable { qualities.insert(.nullable) }
        if attribute.isNonVolatile { qualities.insert(.nonVolatile) }
        if case .list = attribute.type { qualities.insert(.list) }
        return AttributeDefinition(attribute.id, attribute.name, qualities)
    }

    func read(_ attribute: AttributeID, context: ReadContext) throws(IMError) -> TLVValue {
        guard let descriptor = descriptor.attribute(id: attribute),
              let value = place.view()?.type(place.typeIndex).value(trait: traitIndex, attribute: attribute) else {
            throw IMError(.unsupportedAttribute, "\(self.descriptor.id) of '\(place.deviceID)' has no attribute "
                          + "0x\(String(attribute, radix: 16))")
        }
        return ValueTLV.encode(value, as: descriptor.type)
    }

    func invoke(_ command: CommandID, fields: TLVElement?, context: ActionContext,
                completion: @escaping @Sendable (Result<CommandResult, IMError>) -> Void) {
        BridgedRequests.invoke(command, fields: fields, descriptor: descriptor, deviceID: place.deviceID,
                               typeName: place.typeName, door: door, completion: completion)
    }

    func write(_ attribute: AttributeID, value: TLVValue, context: ActionContext,
               completion: @escaping @Sendable (IMError?) -> Void) {
        BridgedRequests.write(attribute, value: value, descriptor: descriptor, deviceID: place.deviceID,
                              typeName: place.typeName, door: door, completion: completion)
    }
}

/// BridgedDeviceBasicInformation (0x0039): the device's name as NodeLabel (writable: a rename), whether it can be
/// reached, a UniqueID that stays the device's, and what its BasicInformation trait says about who made it.
final class BridgedBasicInformationCluster: DeferredClusterServer {
    static let clusterID: ClusterID = 0x0039
    static let nodeLabel: AttributeID = 0x0005
    static let reachable: AttributeID = 0x0011
    static let uniqueID: AttributeID = 0x0012
    static let reachableChanged: EventID = 0x03
    /// The attributes BridgedDeviceBasicInformation shares with BasicInformation, by id: a device's BasicInformation
    /// trait fills them in.
    static let sharedAttributes: Set<AttributeID> = [0x01, 0x02, 0x03, 0x04, 0x07, 0x08, 0x09, 0x0A, 0x0B, 0x0C, 0x0D,
                                                     0x0E, 0x0F, 0x14]

    let id = BridgedBasicInformationCluster.clusterID
    let revision: UInt16 = 4
    let attributes: [AttributeDefinition]
    let events = [EventDefinition(BridgedBasicInformationCluster.reachableChanged, "ReachableChanged")]

    private let place: BridgedPlace
    /// The BasicInformation trait's position on the device's first type, if it has one.
    private let basicInformation: (trait: Int, descriptor: TraitDescriptor)?
    private let uniqueIDValue: String
    private let door: any BridgeDoor

    init(place: BridgedPlace, hubID: String, view: DeviceTypeView, door: any BridgeDoor) {
        self.place = place
        self.door = door
        uniqueIDValue = Self.uniqueID(hubID: hubID, deviceID: place.deviceID)
        var found: (trait: Int, descriptor: TraitDescriptor)?
        for k in 0..<view.traitCount where view.traitID(k) == .basicInformation {
            found = (k, view.traitDescriptor(k))
        }
        basicInformation = found
        var attributes = [
            AttributeDefinition(Self.nodeLabel, "NodeLabel", [.writable, .nonVolatile], write: .manage),
            AttributeDefinition(Self.reachable, "Reachable"),
            AttributeDefinition(Self.uniqueID, "UniqueID", [.fixed]),
        ]
        if let found {
            for attribute in found.descriptor.attributes where Self.sharedAttributes.contains(attribute.id)
                && view.value(trait: found.trait, attribute: attribute.id) != nil {
                attributes.append(AttributeDefinition(attribute.id, attribute.name, [.fixed]))
            }
        }
        self.attributes = attributes.sorted { $0.id < $1.id }
    }

    /// 32 hexadecimal digits of SHA-256 over the hub and device ids: the same for the device on every start, another
    /// for another device or hub, and never longer than UniqueID's 32 characters.
    static func uniqueID(hubID: String, deviceID: String) -> String {
        let digest = SHA256.hash(Array((hubID + "/" + deviceID).utf8))
        let digits = Array("0123456789abcdef")
        return String(digest.prefix(16).flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] })
    }

    /// A name as NodeLabel holds it: at most 32 bytes of UTF-8, cut between characters.
    static func label(_ name: String) -> String {
        var label = ""
        for character in name {
            guard label.utf8.count + character.utf8.count <= 32 else { break }
            label.append(character)
        }
        return label
    }

    func read(_ attribute: AttributeID, context: ReadContext) throws(IMError) -> TLVValue {
        guard let view = place.view() else { throw IMError(.unsupportedEndpoint, "device '\(place.deviceID)' is gone") }
        switch attribute {
        case Self.nodeLabel: return .utf8(Self.label(view.name))
        case Self.reachable: return .bool(view.sourceConnectivity.connectivityState == .online)
        case Self.uniqueID: return .utf8(uniqueIDValue)
        default:
            guard let (k, descriptor) = basicInformation, let definition = descriptor.attribute(id: attribute),
                  let value = view.type(place.typeIndex).value(trait: k, attribute: attribute) else {
                throw IMError(.unsupportedAttribute, "no attribute 0x\(String(attribute, radix: 16))")
            }
            return ValueTLV.encode(value, as: definition.type)
        }
    }

    func invoke(_ command: CommandID, fields: TLVElement?, context: ActionContext,
                completion: @escaping @Sendable (Result<CommandResult, IMError>) -> Void) {
        completion(.failure(IMError(.unsupportedCommand, "BridgedDeviceBasicInformation has no commands")))
    }

    func write(_ attribute: AttributeID, value: TLVValue, context: ActionContext,
               completion: @escaping @Sendable (IMError?) -> Void) {
        Self.writeLabel(attribute, value: value, device: place.deviceID, door: door, completion: completion)
    }

    /// A write of NodeLabel, checked as the cluster defines it, becomes a rename through `door`; no other attribute
    /// of the cluster is writable. Shared by the hub's own devices and its peers'.
    static func writeLabel(_ attribute: AttributeID, value: TLVValue, device: String, door: any BridgeDoor,
                           completion: @escaping @Sendable (IMError?) -> Void) {
        guard attribute == nodeLabel else {
            return completion(IMError(.unsupportedWrite, "only NodeLabel is writable"))
        }
        guard case .utf8(let name) = value else {
            return completion(IMError(.invalidDataType, "NodeLabel is a string, not a TLV \(value.typeName)"))
        }
        guard name.utf8.count <= 32 else {
            return completion(IMError(.constraintError, "NodeLabel is \(name.utf8.count) bytes long; at most 32"))
        }
        door.rename(device: device, to: name) { error in completion(error.map(IMError.init)) }
    }
}
