import HearthEngine
import HearthMatter
import HearthMatterBridge
import HearthModel
import HearthSync
import Testing

/// A door that records what it is asked and answers at once, as the hub's would once the owner has answered.
private final class RecordingDoor: BridgeDoor {
    let asked = Locked<[String]>([])

    func invoke(device: String, type: String, trait: TraitID, command: String, arguments: [String: Value],
                reply: @escaping @Sendable (Result<[String: Value]?, HomeError>) -> Void) {
        asked.withLock { $0.append("\(device) \(type) \(trait).\(command)") }
        reply(.success(nil))
    }

    func update(device: String, type: String, trait: TraitID, attributes: [String: Value],
                reply: @escaping @Sendable (HomeError?) -> Void) {
        asked.withLock { $0.append("\(device) \(type) \(trait) update \(attributes.keys.sorted())") }
        reply(nil)
    }

    func rename(device: String, to name: String, reply: @escaping @Sendable (HomeError?) -> Void) {
        asked.withLock { $0.append("\(device) rename \(name)") }
        reply(nil)
    }
}

private let subject = SubjectDescriptor.pase()
private let readContext = ReadContext(subject: subject, isFabricFiltered: true)

/// The hub's own bridge (one lamp) and the peers' on one data model and one number table.
private struct PeerRig {
    let home: Home
    let model = DataModel(initialDataVersion: 100) { [] }
    let local: MatterBridge
    let peers: PeerBridge
    let door = RecordingDoor()

    init(storage: InMemoryNodeStorage = InMemoryNodeStorage(), hubID: String = "a", localDevice: String = "lamp") throws
    {
        home = try Home(devices: [
            DeviceConfiguration(id: localDevice, name: "Kitchen lamp", isMatterDevice: true,
                                types: [DeviceTypeConfiguration(.onOffLight)]),
        ], clock: ManualClock())
        model.addEndpoint(EndpointDefinition(id: 0, deviceTypes: [.rootNode], clusters: []))
        let numbers = try EndpointNumbers(storage: storage)
        local = MatterBridge(home: home, door: door, dataModel: model, numbers: numbers, hubID: hubID, log: { _ in })
        try local.start()
        peers = PeerBridge(registry: home.registry, door: door, dataModel: model, numbers: numbers, log: { _ in })
    }

    func value(_ endpoint: EndpointID, _ cluster: ClusterID, _ attribute: AttributeID) -> TLVValue? {
        let reports = model.read([AttributePath(endpoint: endpoint, cluster: cluster, attribute: attribute)],
                                 context: readContext)
        if case .data(let data)? = reports.first { return data.data }
        return nil
    }

    func parts(_ endpoint: EndpointID) -> [UInt64] {
        guard case .array(let items)? = value(endpoint, 0x001D, 3) else { return [] }
        return items.compactMap(\.unsignedValue)
    }
}

private func light(_ id: String, hub: String = "b", on: Bool = false, reachable: Bool = true,
                   withPlug: Bool = false) -> PeerBridgedDevice {
    var types = [PeerBridgedDevice.DeviceType(.onOffLight, traits: [
        .init(.onOff, values: ["onOff": .bool(on)], commands: ["off", "on", "toggle"]),
    ])]
    if withPlug {
        types.append(
            .init(.onOffPlugInUnit, traits: [.init(.onOff, values: ["onOff": .bool(false)], commands: ["on"])]))
    }
    return PeerBridgedDevice(id: id, hub: hub, name: "Light \(id)", isReachable: reachable, types: types)
}

private let onOff: ClusterID = 0x0006
private let basic: ClusterID = 0x0039

@Suite struct PeerBridgeTests {
    @Test func peerDevicesJoinTheAggregatorAfterTheHubsOwn() throws {
        let rig = try PeerRig()
        try rig.peers.replace(hub: "b", devices: [light("attic", withPlug: true), light("cellar")])
        try rig.peers.replace(hub: "c", devices: [light("garage", hub: "c")])
        #expect(rig.local.endpoints(of: "lamp") == ["OnOffLight": 2])
        #expect(rig.peers.endpoints(of: "attic") == ["OnOffLight": 3, "OnOffPlugInUnit": 4])
        #expect(rig.peers.endpoints(of: "cellar") == ["OnOffLight": 5])
        #expect(rig.peers.endpoints(of: "garage") == ["OnOffLight": 6])
        #expect(rig.parts(1) == [2, 3, 4, 5, 6])
        #expect(rig.parts(3) == [4])
        // The UniqueID is the one the owner's own bridge gives it: the same on any hub that bridges the device.
        let owner = try PeerRig(hubID: "b", localDevice: "attic")
        #expect(rig.value(3, basic, 0x0012) != nil)
        #expect(rig.value(3, basic, 0x0012) == owner.value(2, basic, 0x0012))
    }

    @Test func aPeersSetIsReplacedAndNumbersStayKeyedByDeviceID() throws {
        let storage = InMemoryNodeStorage()
        let rig = try PeerRig(storage: storage)
        try rig.peers.replace(hub: "b", devices: [light("attic"), light("cellar")])
        try rig.peers.replace(hub: "c", devices: [light("garage", hub: "c")])
        // b no longer lists the attic: it leaves; c's device stays.
        try rig.peers.replace(hub: "b", devices: [light("cellar")])
        #expect(rig.peers.endpoints(of: "attic") == nil)
        #expect(rig.peers.deviceIDs == ["cellar", "garage"])
        #expect(rig.parts(1) == [2, 4, 5])
        // Back, under its old number; after a restart too.
        try rig.peers.replace(hub: "b", devices: [light("attic"), light("cellar")])
        #expect(rig.peers.endpoints(of: "attic") == ["OnOffLight": 3])
        let restarted = try PeerRig(storage: storage)
        try restarted.peers.replace(hub: "c", devices: [light("garage", hub: "c")])
        #expect(restarted.peers.endpoints(of: "garage") == ["OnOffLight": 5])
    }

    @Test func valuesFollowTheOwnersDocument() throws {
        let rig = try PeerRig()
        try rig.peers.update(light("attic"))
        #expect(rig.value(3, onOff, 0) == .bool(false))
        let before = rig.model.dataVersion(ConcreteClusterPath(endpoint: 3, cluster: onOff))
        try rig.peers.update(light("attic", on: true))
        #expect(rig.value(3, onOff, 0) == .bool(true))
        #expect(rig.model.dataVersion(ConcreteClusterPath(endpoint: 3, cluster: onOff)) != before)
        // The same endpoint, not made again.
        #expect(rig.peers.endpoints(of: "attic") == ["OnOffLight": 3])
    }

    @Test func commandsAndWritesGoThroughTheDoorByDeviceID() throws {
        let rig = try PeerRig()
        try rig.peers.update(light("attic"))
        let cluster = try #require(rig.model.cluster(ConcreteClusterPath(endpoint: 3, cluster: onOff))
            as? any DeferredClusterServer)
        let answered = Locked<Result<CommandResult, IMError>?>(nil)
        cluster.invoke(
            0x02, fields: nil,
            context: ActionContext(subject: subject, endpoint: 3, now: MatterInstant(milliseconds: 0))
        ) { r in
            answered.withLock { $0 = r }
        }
        #expect(answered.withLock { r in if case .success? = r { true } else { false } })
        let label = try #require(rig.model.cluster(ConcreteClusterPath(endpoint: 3, cluster: basic))
            as? any DeferredClusterServer)
        label.write(0x0005, value: .utf8("Loft"),
                    context: ActionContext(subject: subject, endpoint: 3, now: MatterInstant(milliseconds: 0))) { _ in }
        #expect(rig.door.asked.withLock { $0 } == ["attic OnOffLight onOff.toggle", "attic rename Loft"])
    }

    @Test func reachableFollowsTheOwner() throws {
        let rig = try PeerRig()
        try rig.peers.update(light("attic"))
        #expect(rig.value(3, basic, 0x0011) == .bool(true))
        let before = rig.model.dataVersion(ConcreteClusterPath(endpoint: 3, cluster: basic))
        try rig.peers.update(light("attic", reachable: false))
        #expect(rig.value(3, basic, 0x0011) == .bool(false))
        #expect(rig.model.dataVersion(ConcreteClusterPath(endpoint: 3, cluster: basic)) != before)
        try rig.peers.update(light("attic", reachable: true))
        #expect(rig.value(3, basic, 0x0011) == .bool(true))
    }

    @Test func aDeviceWhoseShapeChangesIsMadeAgainUnderItsNumbers() throws {
        let rig = try PeerRig()
        try rig.peers.update(light("attic"))
        try rig.peers.update(light("attic", withPlug: true))
        #expect(rig.peers.endpoints(of: "attic") == ["OnOffLight": 3, "OnOffPlugInUnit": 4])
        #expect(rig.parts(3) == [4])
        try rig.peers.update(light("attic"))
        #expect(rig.peers.endpoints(of: "attic") == ["OnOffLight": 3])
        #expect(rig.parts(3) == [])
        #expect(!rig.model.endpointIDs.contains(4))
    }
}
