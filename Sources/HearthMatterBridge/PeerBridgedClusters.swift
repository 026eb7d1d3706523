// The clusters of a peer's device on the bridge: the same clusters as a local device's (BridgedTraitCluster,
// BridgedBasicInformationCluster), read from what the owner last published (`PeerDeviceStore`) instead of the engine.
// Commands and writes are decoded as a local device's and go through the door by device id, which forwards them to
// the owner.

import HearthEngine
import HearthMatter
import HearthModel

/// Commands and writes of a bridged trait cluster: TLV decoded by the trait's descriptor, run through the door.
enum BridgedRequests {
    static func invoke(_ command: CommandID, fields: TLVElement?, descriptor: TraitDescriptor, deviceID: String,
                       typeName: String, door: any BridgeDoor,
                       completion: @escaping @Sendable (Result<CommandResult, IMError>) -> Void) {
        guard let command = descriptor.commands.first(where: { $0.id == command }) else {
            return completion(.failure(IMError(.unsupportedCommand, "no command 0x\(String(command, radix: 16))")))
        }
        let arguments: [String: Value]
        do throws(IMError) {
            var members: [TLVElement] = []
            if let fields {
                guard let structure = fields.structureMembers else {
                    throw IMError(.invalidCommand, "\(command.name)'s fields must be a structure")
                }
                members = structure
            }
            arguments = try ValueTLV.decodeFields(
                members, command.fields, what: command.name, mismatch: .invalidCommand)
        } catch {
            return completion(.failure(error))
        }
        door.invoke(device: deviceID, type: typeName, trait: descriptor.id, command: command.name,
                    arguments: arguments) { result in
            switch result {
            case .success(let response?) where !command.response.isEmpty:
                let members = ValueTLV.encodeFields(response, command.response)
                completion(.success(.response(command.id, TLVElement(.structure(members)))))
            case .success:
                completion(.success(.success))
            case .failure(let error):
                completion(.failure(IMError(error)))
            }
        }
    }

    static func write(_ attribute: AttributeID, value: TLVValue, descriptor: TraitDescriptor, deviceID: String,
                      typeName: String, door: any BridgeDoor, completion: @escaping @Sendable (IMError?) -> Void) {
        guard let definition = descriptor.attribute(id: attribute) else {
            return completion(IMError(.unsupportedAttribute, "no attribute 0x\(String(attribute, radix: 16))"))
        }
        let decoded: Value
        do throws(IMError) {
            decoded = try ValueTLV.decode(value, as: definition.type, what: "\(descriptor.id).\(definition.name)",
                                          mismatch: .invalidDataType)
        } catch {
            return completion(error)
        }
        door.update(device: deviceID, type: typeName, trait: descriptor.id,
                    attributes: [definition.name: decoded]) { error in
            completion(error.map(IMError.init))
        }
    }
}

/// A trait of a peer's device as a Matter cluster.
final class PeerTraitCluster: DeferredClusterServer {
    let id: ClusterID
    let revision: UInt16
    let featureMap: UInt32
    let attributes: [AttributeDefinition]
    let acceptedCommands: [CommandDefinition]
    let generatedCommands: [CommandID]
    let events: [EventDefinition]

    private let store: PeerDeviceStore
    private let deviceID: String
    private let typeIndex: Int
    private let traitIndex: Int
    private let typeName: String
    private let descriptor: TraitDescriptor
    private let door: any BridgeDoor

    init(store: PeerDeviceStore, deviceID: String, typeIndex: Int, traitIndex: Int, descriptor: TraitDescriptor,
         featureMap: UInt32, trait: PeerBridgedDevice.Trait, typeName: String, door: any BridgeDoor) {
        self.store = store
        self.deviceID = deviceID
        self.typeIndex = typeIndex
        self.traitIndex = traitIndex
        self.typeName = typeName
        self.descriptor = descriptor
        self.door = door
        self.featureMap = featureMap
        id = descriptor.clusterID
        revision = descriptor.revision
        attributes = descriptor.attributes
            .filter { $0.id < 0xF000 && trait.values[$0.name] != nil }
            .sorted { $0.id < $1.id }
            .map(BridgedTraitCluster.definition)
        let supported = descriptor.commands.filter { trait.commands.contains($0.name) }
        acceptedCommands = supported.map { command in
            CommandDefinition(command.id, command.name, response: command.response.isEmpty ? nil : command.id)
        }
        generatedCommands = supported.filter { !$0.response.isEmpty }.map(\.id)
        events = descriptor.events.map { EventDefinition($0.id, $0.name) }
    }

    func read(_ attribute: AttributeID, context: ReadContext) throws(IMError) -> TLVValue {
        guard let definition = descriptor.attribute(id: attribute),
              let value = store.value(deviceID, type: typeIndex, trait: traitIndex, attribute: definition.name) else {
            throw IMError(.unsupportedAttribute, "\(descriptor.id) of '\(deviceID)' has no attribute "
                          + "0x\(String(attribute, radix: 16))")
        }
        return ValueTLV.encode(value, as: definition.type)
    }

    func invoke(_ command: CommandID, fields: TLVElement?, context: ActionContext,
                completion: @escaping @Sendable (Result<CommandResult, IMError>) -> Void) {
        BridgedRequests.invoke(command, fields: fields, descriptor: descriptor, deviceID: deviceID, typeName: typeName,
                               door: door, completion: completion)
    }

    func write(_ attribute: AttributeID, value: TLVValue, context: ActionContext,
               completion: @escaping @Sendable (IMError?) -> Void) {
        BridgedRequests.write(attribute, value: value, descriptor: descriptor, deviceID: deviceID, typeName: typeName,
                              door: door, completion: completion)
    }
}

/// BridgedDeviceBasicInformation of a peer's device: its name, Reachable as its owner is seen from this hub, the
/// UniqueID its owner's bridge gives it, and what its BasicInformation trait says.
final class PeerBasicInformationCluster: DeferredClusterServer {
    let id = BridgedBasicInformationCluster.clusterID
    let revision: UInt16 = 4
    let attributes: [AttributeDefinition]
    let events = [EventDefinition(BridgedBasicInformationCluster.reachableChanged, "ReachableChanged")]

    private let store: PeerDeviceStore
    private let deviceID: String
    private let uniqueIDValue: String
    /// The BasicInformation trait's position on the primary type and its descriptor, if it has one.
    private let basicInformation: (trait: Int, descriptor: TraitDescriptor)?
    private let door: any BridgeDoor

    init(store: PeerDeviceStore, device: PeerBridgedDevice, basicInformation descriptor: TraitDescriptor?,
         door: any BridgeDoor) {
        self.store = store
        self.door = door
        deviceID = device.id
        uniqueIDValue = BridgedBasicInformationCluster.uniqueID(hubID: device.hub, deviceID: device.id)
        var attributes = [
            AttributeDefinition(BridgedBasicInformationCluster.nodeLabel, "NodeLabel", [.writable, .nonVolatile],
                                write: .manage),
            AttributeDefinition(BridgedBasicInformationCluster.reachable, "Reachable"),
            AttributeDefinition(BridgedBasicInformationCluster.uniqueID, "UniqueID", [.fixed]),
        ]
        var found: (trait: Int, descriptor: TraitDescriptor)?
        if let k = device.types[0].traits.firstIndex(where: { $0.id == .basicInformation }), let descriptor {
            found = (k, descriptor)
            for attribute in descriptor.attributes
            where BridgedBasicInformationCluster.sharedAttributes.contains(attribute.id)
                && device.types[0].traits[k].values[attribute.name] != nil {
                attributes.append(AttributeDefinition(attribute.id, attribute.name, [.fixed]))
            }
        }
        basicInformation = found
        self.attributes = attributes.sorted { $0.id < $1.id }
    }

    func read(_ attribute: AttributeID, context: ReadContext) throws(IMError) -> TLVValue {
        guard let device = store.device(deviceID) else {
            throw IMError(.unsupportedEndpoint, "device '\(deviceID)' is gone")
        }
        switch attribute {
        case BridgedBasicInformationCluster.nodeLabel: return .utf8(BridgedBasicInformationCluster.label(device.name))
        case BridgedBasicInformationCluster.reachable: return .bool(device.isReachable)
        case BridgedBasicInformationCluster.uniqueID: return .utf8(uniqueIDValue)
        default:
            guard let (k, descriptor) = basicInformation, let definition = descriptor.attribute(id: attribute),
                  let value = store.value(deviceID, type: 0, trait: k, attribute: definition.name) else {
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
        BridgedBasicInformationCluster.writeLabel(attribute, value: value, device: deviceID, door: door,
                                                  completion: completion)
    }
}
