// The hub's devices on a Matter node, as a bridge: endpoint 1 an Aggregator, and under it one Bridged Node endpoint per
// device with BridgedDeviceBasicInformation and the clusters of its primary type. A device with further types is a
// composed bridged node: each further type is an endpoint of its own under the device's (its PartsList), because a type
// is what Matter calls an endpoint — two types of one device may have the same cluster (a plug's OnOff and its
// light's), which one endpoint could not hold. Devices mirrored from another hub are left to their own hub's bridge, so
// that a controller pairing every hub sees each device once; `matter: false` leaves a device off.
//
// Every change the engine makes reaches the node as it happens (the engine's observer, on the thread that made it):
// an attribute moves its cluster's DataVersion, a trait event becomes a Matter event, a connectivity change moves
// Reachable (with ReachableChanged). The node reads values from the engine when it reports, so a report never waits
// for a device.

public import HearthEngine
public import HearthMatter
import HearthModel
import HearthSync

/// The bridge between a home and a Matter node's data model.
public final class MatterBridge: Sendable {
    /// A device on the bridge: its endpoints by type name, the bridged node's, and what Reachable last said.
    private struct BridgedDevice: Sendable {
        var primary: EndpointID
        var endpoints: [String: EndpointID]
        var reachable: Bool
    }

    private let home: Home
    private let door: any BridgeDoor
    private let dataModel: DataModel
    private let numbers: EndpointNumbers
    private let hubID: String
    private let log: @Sendable (String) -> Void
    private let devices = Locked<[String: BridgedDevice]>([:])
    private let observer = Locked<Int?>(nil)

    /// Devices whose `isMatterDevice` is false (their configuration's `matter: false`) stay off the bridge.
    public init(home: Home, door: any BridgeDoor, dataModel: DataModel, numbers: EndpointNumbers, hubID: String,
                log: @escaping @Sendable (String) -> Void) {
        self.home = home
        self.door = door
        self.dataModel = dataModel
        self.numbers = numbers
        self.hubID = hubID
        self.log = log
    }

    /// Puts the aggregator and every device on the node and follows the home's changes.
    public func start() throws(StorageError) {
        dataModel.addEndpoint(EndpointDefinition(id: EndpointNumbers.aggregator, deviceTypes: [.aggregator],
                                                 clusters: []))
        try sync()
        let id = home.observe { [weak self] events in self?.apply(events) }
        observer.withLock { $0 = id }
    }

    /// Stops following the home (the endpoints stay until the node stops).
    public func stop() {
        if let id = observer.withLock({ $0 }) { home.removeObserver(id) }
    }

    /// Makes the bridged endpoints those of the home's devices now: adds the new, removes the gone, keeps the rest
    /// with their numbers.
    public func sync() throws(StorageError) {
        let views = home.views().filter { view in
            view.isMatterDevice && (0..<view.typeCount).contains { !view.type($0).isMirrored }
        }
        var keys: [String] = []
        for view in views {
            for t in Self.typeOrder(view) { keys.append(Self.key(view, type: t)) }
        }
        let assigned = try numbers.numbers(for: keys)
        var wanted: [String: BridgedDevice] = [:]
        var definitions: [EndpointDefinition] = []
        for view in views {
            let order = Self.typeOrder(view)
            guard let primary = assigned[Self.key(view, type: order[0])] else { continue }
            var device = BridgedDevice(primary: primary, endpoints: [:],
                                       reachable: view.sourceConnectivity.connectivityState == .online)
            for t in order {
                guard let number = assigned[Self.key(view, type: t)] else { continue }
                let type = view.type(t)
                device.endpoints[type.name] = number
                let place = BridgedPlace(home: home, deviceID: view.id, typeIndex: t, typeName: type.name)
                var clusters: [any ClusterServer] = (0..<type.traitCount)
                    .filter { type.traitID($0) != .basicInformation }
                    .map { BridgedTraitCluster(place: place, traitIndex: $0, device: view, door: door) }
                let deviceType = DeviceTypeRevision(type.descriptor.id, revision: type.descriptor.revision)
                if number == primary {
                    clusters.append(BridgedBasicInformationCluster(place: place, hubID: hubID, view: type, door: door))
                    definitions.append(EndpointDefinition(id: number, deviceTypes: [.bridgedNode, deviceType],
                                                          parent: EndpointNumbers.aggregator, clusters: clusters))
                } else {
                    definitions.append(EndpointDefinition(id: number, deviceTypes: [deviceType], parent: primary,
                                                          clusters: clusters))
                }
            }
            wanted[view.id] = device
        }
        let gone = devices.withLock { current in
            defer { current = wanted }
            return current.filter { wanted[$0.key] == nil }
        }
        for (id, device) in gone {
            for number in device.endpoints.values { dataModel.removeEndpoint(number) }
            log("matter: device '\(id)' left the bridge (endpoint \(device.primary))")
        }
        // Each is added anew (its clusters follow the device's configuration); its DataVersions carry on.
        for definition in definitions.sorted(by: { $0.id < $1.id }) { dataModel.addEndpoint(definition) }
    }

    /// The endpoint numbers of a device's types, by type name (for tests and logs).
    public func endpoints(of deviceID: String) -> [String: EndpointID]? {
        devices.withLock { $0[deviceID]?.endpoints }
    }

    /// The device's types in endpoint order: the primary first, then the others as configured; mirrored ones left out.
    private static func typeOrder(_ view: DeviceView) -> [Int] {
        let own = (0..<view.typeCount).filter { !view.type($0).isMirrored }
        let primary = own.first { view.type($0).isPrimaryType } ?? own[0]
        return [primary] + own.filter { $0 != primary }
    }

    private static func key(_ view: DeviceView, type t: Int) -> String {
        let primary = typeOrder(view)[0]
        return t == primary ? view.id : view.id + "/" + view.type(t).name
    }

    // MARK: Changes

    private func apply(_ events: [HomeEvent]) {
        for event in events {
            guard let device = devices.withLock({ $0[event.deviceID] }) else { continue }
            switch event.change {
            case .attribute(let type, let trait, _, _), .unsupported(let type, let trait, _),
                .table(let type, let trait):
                markTrait(trait, of: device, type: type)
            case .connectivity:
                reachabilityMayHaveChanged(event.deviceID, device)
            case .metadata:
                dataModel.markChanged(ConcreteClusterPath(endpoint: device.primary,
                                                          cluster: BridgedBasicInformationCluster.clusterID))
            case .event(let type, let trait, let name, let fields):
                guard let endpoint = device.endpoints[type],
                      let descriptor = home.registry.server(for: trait)?.descriptor,
                      let definition = descriptor.event(named: name) else { continue }
                let data = TLVElement(.structure(ValueTLV.encodeFields(fields, definition.fields)))
                dataModel.emitEvent(ConcreteEventPath(endpoint: endpoint, cluster: descriptor.clusterID,
                                                      event: definition.id),
                                    priority: .info, data: data)
            }
        }
    }

    private func markTrait(_ trait: TraitID, of device: BridgedDevice, type: String) {
        if trait == .basicInformation {
            dataModel.markChanged(ConcreteClusterPath(endpoint: device.primary,
                                                      cluster: BridgedBasicInformationCluster.clusterID))
            return
        }
        guard let endpoint = device.endpoints[type],
              let cluster = home.registry.server(for: trait)?.descriptor.clusterID else { return }
        dataModel.markChanged(ConcreteClusterPath(endpoint: endpoint, cluster: cluster))
    }

    private func reachabilityMayHaveChanged(_ deviceID: String, _ device: BridgedDevice) {
        guard let view = try? home.view(deviceID) else { return }
        let reachable = view.sourceConnectivity.connectivityState == .online
        let changed = devices.withLock { devices -> Bool in
            guard devices[deviceID]?.reachable != reachable else { return false }
            devices[deviceID]?.reachable = reachable
            return true
        }
        guard changed else { return }
        dataModel.markChanged(ConcreteClusterPath(endpoint: device.primary,
                                                  cluster: BridgedBasicInformationCluster.clusterID))
        dataModel.emitEvent(
            ConcreteEventPath(
                endpoint: device.primary, cluster: BridgedBasicInformationCluster.clusterID,
                event: BridgedBasicInformationCluster.reachableChanged),
            priority: .info, data: TLVElement(.structure([TLVElement(context: 0, .bool(reachable))])))
    }
}
