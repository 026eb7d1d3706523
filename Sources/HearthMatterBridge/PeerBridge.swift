// The devices of other hubs on this hub's Matter bridge (`matter: {bridge: home}`, docs/matter.md, "Bridging the
// home"): each peer device as the hub sees it — its types, traits, values and supported commands as its owner last
// published them — is a bridged node under the same aggregator as the hub's own devices, numbered from the same table
// (keyed by device id, so a device keeps its number whichever hub it is on). Its values are held here, not in the
// engine: a peer's device is not the engine's, and its owner's document is all this hub knows of it. Commands and
// writes go through the same door as the hub's own devices, which forwards them to the owner (peer routing);
// Reachable follows the owner's connectivity as the hub sees it (the owner gone: false).

public import HearthEngine
public import HearthMatter
public import HearthModel
import HearthSync

/// One device of a peer hub, as the bridge shows it.
public struct PeerBridgedDevice: Sendable, Equatable {
    /// One device type of it: the primary type first.
    public struct DeviceType: Sendable, Equatable {
        public var descriptor: DeviceTypeDescriptor
        public var traits: [Trait]
        public init(_ descriptor: DeviceTypeDescriptor, traits: [Trait]) {
            self.descriptor = descriptor
            self.traits = traits
        }

        public static func == (a: Self, b: Self) -> Bool {
            a.descriptor.name == b.descriptor.name && a.descriptor.id == b.descriptor.id && a.traits == b.traits
        }
    }

    /// One trait of a type: the values its owner published (by attribute name, each checked against the descriptor
    /// by whoever made it) and the commands it supports.
    public struct Trait: Sendable, Equatable {
        public var id: TraitID
        public var values: [String: Value]
        public var commands: [String]
        public init(_ id: TraitID, values: [String: Value], commands: [String]) {
            self.id = id
            self.values = values
            self.commands = commands
        }
    }

    public var id: String
    /// The hub that owns it: its UniqueID is made from this, so it is the same on any hub that bridges it.
    public var hub: String
    public var name: String
    /// Whether the owner and the device are online as this hub sees them.
    public var isReachable: Bool
    public var types: [DeviceType]

    public init(id: String, hub: String, name: String, isReachable: Bool, types: [DeviceType]) {
        self.id = id
        self.hub = hub
        self.name = name
        self.isReachable = isReachable
        self.types = types
    }

    /// What the endpoints and their clusters are made from: types, traits, supported attributes and commands. When it
    /// changes the device's endpoints are made again; otherwise a change only marks the clusters whose values moved.
    var shape: [[String]] {
        types.map { t in
            [t.descriptor.name] + t.traits.map { trait in
                trait.id.qualifiedName + ":" + trait.values.keys.sorted().joined(separator: ",") + ":"
                    + trait.commands.sorted().joined(separator: ",")
            }
        }
    }
}

/// The peers' devices on the node: adds, updates and removes their endpoints as the hub's view of its peers changes.
public final class PeerBridge: Sendable {
    private struct Bridged: Sendable {
        var device: PeerBridgedDevice
        /// Endpoint by type name; the primary's is the bridged node.
        var endpoints: [String: EndpointID]
        var primary: EndpointID
    }

    private let registry: TraitRegistry
    private let door: any BridgeDoor
    private let dataModel: DataModel
    private let numbers: EndpointNumbers
    private let log: @Sendable (String) -> Void
    let store = PeerDeviceStore()
    private let bridged = Locked<[String: Bridged]>([:])

    /// `numbers` must be the table the hub's own bridge uses, so that a number is never given twice.
    public init(registry: TraitRegistry, door: any BridgeDoor, dataModel: DataModel, numbers: EndpointNumbers,
                log: @escaping @Sendable (String) -> Void) {
        self.registry = registry
        self.door = door
        self.dataModel = dataModel
        self.numbers = numbers
        self.log = log
    }

    /// The endpoint numbers of a peer device's types, by type name (for tests and logs).
    public func endpoints(of deviceID: String) -> [String: EndpointID]? {
        bridged.withLock { $0[deviceID]?.endpoints }
    }

    /// The ids of the peer devices on the bridge.
    public var deviceIDs: [String] { bridged.withLock { $0.keys.sorted() } }

    /// Makes `hub`'s devices on the bridge exactly `devices` (those of other hubs are left as they are).
    public func replace(hub: String, devices: [PeerBridgedDevice]) throws(StorageError) {
        let kept = Set(devices.map(\.id))
        let gone = bridged.withLock { b in
            b.values.filter { $0.device.hub == hub && !kept.contains($0.device.id) }.map(\.device.id)
        }
        for id in gone { remove(id) }
        for device in devices where device.hub == hub { try update(device) }
    }

    /// Puts one peer device on the bridge, or brings its endpoints up to date.
    public func update(_ device: PeerBridgedDevice) throws(StorageError) {
        guard !device.types.isEmpty else { return remove(device.id) }
        let old = bridged.withLock { $0[device.id] }
        store.set(device)
        if let old, old.device.shape == device.shape, old.device.hub == device.hub {
            bridged.withLock { $0[device.id]?.device = device }
            markChanges(from: old, to: device)
            return
        }
        if let old { for number in old.endpoints.values { dataModel.removeEndpoint(number) } }
        let keys = device.types.enumerated().map { n, t in n == 0 ? device.id : device.id + "/" + t.descriptor.name }
        let assigned = try numbers.numbers(for: keys)
        guard let primary = assigned[keys[0]] else { return }
        var entry = Bridged(device: device, endpoints: [:], primary: primary)
        var definitions: [EndpointDefinition] = []
        for (n, type) in device.types.enumerated() {
            guard let number = assigned[keys[n]] else { continue }
            entry.endpoints[type.descriptor.name] = number
            var clusters: [any ClusterServer] = type.traits.enumerated().compactMap { k, trait in
                guard trait.id != .basicInformation, let server = registry.server(for: trait.id) else { return nil }
                return PeerTraitCluster(store: store, deviceID: device.id, typeIndex: n, traitIndex: k,
                                        descriptor: server.descriptor,
                                        featureMap: server.descriptor.featureMap(
                                            of: type.descriptor.requiredFeatures[trait.id] ?? []),
                                        trait: trait, typeName: type.descriptor.name, door: door)
            }
            let deviceType = DeviceTypeRevision(type.descriptor.id, revision: type.descriptor.revision)
            if n == 0 {
                clusters.append(PeerBasicInformationCluster(
                    store: store, device: device,
                    basicInformation: registry.server(for: .basicInformation)?.descriptor, door: door))
                definitions.append(EndpointDefinition(id: number, deviceTypes: [.bridgedNode, deviceType],
                                                      parent: EndpointNumbers.aggregator, clusters: clusters))
            } else {
                definitions.append(EndpointDefinition(id: number, deviceTypes: [deviceType], parent: primary,
                                                      clusters: clusters))
            }
        }
        bridged.withLock { $0[device.id] = entry }
        for definition in definitions { dataModel.addEndpoint(definition) }
        if old == nil {
            log("matter: hub '\(device.hub)''s device '\(device.id)' is on the bridge (endpoint \(primary))")
        }
    }

    /// Takes a peer device off the bridge (its number stays its own).
    public func remove(_ deviceID: String) {
        guard let old = bridged.withLock({ $0.removeValue(forKey: deviceID) }) else { return }
        store.remove(deviceID)
        for number in old.endpoints.values { dataModel.removeEndpoint(number) }
        log("matter: hub '\(old.device.hub)''s device '\(deviceID)' left the bridge (endpoint \(old.primary))")
    }

    private func markChanges(from old: Bridged, to device: PeerBridgedDevice) {
        let basic = ConcreteClusterPath(endpoint: old.primary, cluster: BridgedBasicInformationCluster.clusterID)
        for (n, type) in device.types.enumerated() {
            guard let endpoint = old.endpoints[type.descriptor.name] else { continue }
            for (k, trait) in type.traits.enumerated() where trait.values != old.device.types[n].traits[k].values {
                if trait.id == .basicInformation {
                    dataModel.markChanged(basic)
                } else if let cluster = registry.server(for: trait.id)?.descriptor.clusterID {
                    dataModel.markChanged(ConcreteClusterPath(endpoint: endpoint, cluster: cluster))
                }
            }
        }
        if old.device.name != device.name { dataModel.markChanged(basic) }
        if old.device.isReachable != device.isReachable {
            dataModel.markChanged(basic)
            dataModel.emitEvent(
                ConcreteEventPath(
                    endpoint: old.primary, cluster: BridgedBasicInformationCluster.clusterID,
                    event: BridgedBasicInformationCluster.reachableChanged),
                priority: .info,
                data: TLVElement(.structure([TLVElement(context: 0, .bool(device.isReachable))])))
        }
    }
}

/// The peer devices' current values, read by their clusters when the node reports.
final class PeerDeviceStore: Sendable {
    private let devices = Locked<[String: PeerBridgedDevice]>([:])
    func set(_ device: PeerBridgedDevice) { devices.withLock { $0[device.id] = device } }
    func remove(_ id: String) { devices.withLock { _ = $0.removeValue(forKey: id) } }
    func device(_ id: String) -> PeerBridgedDevice? { devices.withLock { $0[id] } }

    /// A value of trait `k` of type `n`, nil when the device is gone or no longer has it.
    func value(_ id: String, type n: Int, trait k: Int, attribute name: String) -> Value? {
        devices.withLock { d in
            guard let device = d[id], n < device.types.count, k < device.types[n].traits.count else { return nil }
            return device.types[n].traits[k].values[name]
        }
    }
}
