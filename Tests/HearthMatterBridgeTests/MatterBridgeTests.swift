import HearthEngine
import HearthMatter
import HearthMatterBridge
import HearthModel
import HearthSync
import Testing

/// A door straight onto the engine: the bridge's own logic under test, without the hub's lanes (the hub's door, the
/// MQTT request path, is what the Matter stage of scripts/test runs end to end).
private struct EngineDoor: BridgeDoor {
    let home: Home

    func invoke(device: String, type: String, trait: TraitID, command: String, arguments: [String: Value],
                reply: @escaping @Sendable (Result<[String: Value]?, HomeError>) -> Void) {
        do throws(HomeError) {
            reply(.success(try home.invoke(device, type: type, trait: trait.qualifiedName, command: command,
                                           arguments: arguments)))
        } catch {
            reply(.failure(error))
        }
    }

    func update(device: String, type: String, trait: TraitID, attributes: [String: Value],
                reply: @escaping @Sendable (HomeError?) -> Void) {
        do throws(HomeError) {
            try home.update(device, type: type, trait: trait.qualifiedName, attributes: attributes)
            reply(nil)
        } catch {
            reply(error)
        }
    }

    func rename(device: String, to name: String, reply: @escaping @Sendable (HomeError?) -> Void) {
        do throws(HomeError) {
            _ = try home.setName(device, name)
            reply(nil)
        } catch {
            reply(error)
        }
    }
}

// A PASE session: the access check grants it everything, so these tests need no ACL.
private let admin = SubjectDescriptor.pase()
private let read = ReadContext(subject: admin, isFabricFiltered: true)
private func action(_ endpoint: EndpointID) -> ActionContext {
    ActionContext(subject: admin, endpoint: endpoint, now: MatterInstant(milliseconds: 0))
}

private func devices(lampName: String = "Kitchen lamp", withSwitch: Bool = true) -> [DeviceConfiguration] {
    var list = [
        DeviceConfiguration(id: "lamp", name: lampName, isMatterDevice: true, types: [
            DeviceTypeConfiguration(.dimmableLight, traits: [
                TraitConfiguration(.basicInformation, attributes: ["vendorName": .string("Acme")]),
            ]),
        ]),
        DeviceConfiguration(id: "plug", name: "Desk plug", isMatterDevice: true, types: [
            DeviceTypeConfiguration(.onOffPlugInUnit),
            DeviceTypeConfiguration(.onOffLight),
        ]),
        DeviceConfiguration(id: "hidden", name: "Not on Matter", isMatterDevice: false, types: [
            DeviceTypeConfiguration(.onOffLight),
        ]),
    ]
    if withSwitch {
        list.insert(
            DeviceConfiguration(
                id: "switch", name: "Hall switch", isMatterDevice: true,
                types: [
                    DeviceTypeConfiguration(
                        .genericSwitch, traits: [TraitConfiguration(.switchTrait, features: ["momentarySwitch"])])
                ]), at: 1)
    }
    return list
}

private struct Rig {
    let home: Home
    let model: DataModel
    let bridge: MatterBridge

    init(_ configurations: [DeviceConfiguration], storage: InMemoryNodeStorage = InMemoryNodeStorage()) throws {
        home = try Home(devices: configurations, clock: ManualClock())
        model = DataModel(initialDataVersion: 100) { [] }
        model.addEndpoint(EndpointDefinition(id: 0, deviceTypes: [.rootNode], clusters: []))
        bridge = MatterBridge(home: home, door: EngineDoor(home: home), dataModel: model,
                              numbers: try EndpointNumbers(storage: storage), hubID: "hub", log: { _ in })
        try bridge.start()
    }

    func value(_ endpoint: EndpointID, _ cluster: ClusterID, _ attribute: AttributeID) -> TLVValue? {
        let reports = model.read([AttributePath(endpoint: endpoint, cluster: cluster, attribute: attribute)],
                                 context: read)
        if case .data(let data)? = reports.first { return data.data }
        return nil
    }

    func cluster(_ endpoint: EndpointID, _ cluster: ClusterID) -> (any DeferredClusterServer)? {
        model.cluster(ConcreteClusterPath(endpoint: endpoint, cluster: cluster)) as? any DeferredClusterServer
    }
}

private func uints(_ value: TLVValue?) -> [UInt64] {
    guard case .array(let items)? = value else { return [] }
    return items.compactMap(\.unsignedValue)
}

private func deviceTypes(_ value: TLVValue?) -> [UInt64] {
    guard case .array(let items)? = value else { return [] }
    return items.compactMap { $0[context: 0]?.unsignedValue }
}

/// Runs a deferred invoke and returns what it completed with (the engine door completes at once).
private func invoke(_ cluster: any DeferredClusterServer, _ command: CommandID, _ fields: [TLVElement],
                    endpoint: EndpointID) -> Result<CommandResult, IMError>? {
    let result = Locked<Result<CommandResult, IMError>?>(nil)
    cluster.invoke(command, fields: TLVElement(.structure(fields)), context: action(endpoint)) { r in
        result.withLock { $0 = r }
    }
    return result.withLock { $0 }
}

@Suite struct MatterBridgeTests {
    @Test func endpointLayoutFollowsTheDevices() throws {
        let rig = try Rig(devices())
        // Numbers in configuration order, from 2: lamp, switch, plug (and its light under it). The hidden one has none.
        #expect(rig.bridge.endpoints(of: "lamp") == ["DimmableLight": 2])
        #expect(rig.bridge.endpoints(of: "switch") == ["GenericSwitch": 3])
        #expect(rig.bridge.endpoints(of: "plug") == ["OnOffPlugInUnit": 4, "OnOffLight": 5])
        #expect(rig.bridge.endpoints(of: "hidden") == nil)
        #expect(rig.model.endpointIDs == [0, 1, 2, 3, 4, 5])

        let descriptor: ClusterID = 0x001D
        #expect(deviceTypes(rig.value(1, descriptor, 0)) == [0x000E])
        #expect(uints(rig.value(1, descriptor, 3)) == [2, 3, 4, 5])
        #expect(uints(rig.value(0, descriptor, 3)) == [1, 2, 3, 4, 5])
        #expect(deviceTypes(rig.value(2, descriptor, 0)) == [0x0013, 0x0101])
        #expect(deviceTypes(rig.value(4, descriptor, 0)) == [0x0013, 0x010A])
        // The plug's light is a part of the plug's bridged node, with its own device type only.
        #expect(deviceTypes(rig.value(5, descriptor, 0)) == [0x0100])
        #expect(uints(rig.value(4, descriptor, 3)) == [5])
        // The dimmable light's clusters: Identify, Groups, OnOff, LevelControl, BridgedDeviceBasicInformation,
        // Descriptor, ScenesManagement (and never BasicInformation, which is the root's).
        #expect(uints(rig.value(2, descriptor, 1)) == [0x0003, 0x0004, 0x0006, 0x0008, 0x001D, 0x0039, 0x0062])
    }

    @Test func valuesAreTheEnginesWithTheirMatterTypes() throws {
        let rig = try Rig(devices())
        #expect(rig.value(2, 0x0006, 0x0000) == .bool(false))
        #expect(rig.value(2, 0x0008, 0x0002) == .unsigned(1))  // MinLevel of a lighting level control
        #expect(rig.value(2, 0x0008, 0x0003) == .unsigned(254))
        #expect(rig.value(2, 0x0006, 0x4003) == .null)  // StartUpOnOff: nullable, not set
        // FeatureMaps: OnOff Lighting (bit 0); LevelControl OnOff and Lighting (bits 0, 1).
        #expect(rig.value(2, 0x0006, 0xFFFC) == .unsigned(1))
        #expect(rig.value(2, 0x0008, 0xFFFC) == .unsigned(3))
        #expect(rig.value(2, 0x0006, 0xFFFD) == .unsigned(6))
        #expect(rig.value(3, 0x003B, 0xFFFC) == .unsigned(2))  // Switch: MomentarySwitch
        // BridgedDeviceBasicInformation.
        #expect(rig.value(2, 0x0039, 0x0005) == .utf8("Kitchen lamp"))
        #expect(rig.value(2, 0x0039, 0x0011) == .bool(true))
        #expect(rig.value(2, 0x0039, 0x0001) == .utf8("Acme"))
        guard case .utf8(let unique)? = rig.value(2, 0x0039, 0x0012) else { Issue.record("no UniqueID"); return }
        #expect(unique.utf8.count == 32)
        #expect(rig.value(3, 0x0039, 0x0012) != rig.value(2, 0x0039, 0x0012))
        // OnOff's commands as this instance takes them: Off, On, Toggle, OffWithEffect, OnWithRecallGlobalScene,
        // OnWithTimedOff.
        #expect(uints(rig.value(2, 0x0006, 0xFFF9)) == [0x00, 0x01, 0x02, 0x40, 0x41, 0x42])
        // Groups answers with its response commands.
        #expect(uints(rig.value(2, 0x0004, 0xFFF8)) == [0x00, 0x01, 0x02, 0x03])
    }

    @Test func aCommandRunsInTheEngineAndMovesTheDataVersion() throws {
        let rig = try Rig(devices())
        let level = ConcreteClusterPath(endpoint: 2, cluster: 0x0008)
        let before = try #require(rig.model.dataVersion(level))
        let onOff = try #require(rig.cluster(2, 0x0006))
        #expect(invoke(onOff, 0x01, [], endpoint: 2) == .success(.success))
        #expect(try rig.home.device("lamp").trait(.onOff)?["onOff"]?.value == .bool(true))
        #expect(rig.value(2, 0x0006, 0x0000) == .bool(true))
        // MoveToLevel(level 200, transition 0): LevelControl's DataVersion moves.
        let levelControl = try #require(rig.cluster(2, 0x0008))
        let moved = invoke(levelControl, 0x00, [TLVElement(context: 0, .uint(UInt8(200))),
                                                TLVElement(context: 1, .uint(UInt16(0))),
                                                TLVElement(context: 2, .uint(UInt8(0))),
                                                TLVElement(context: 3, .uint(UInt8(0)))], endpoint: 2)
        #expect(moved == .success(.success))
        #expect(rig.value(2, 0x0008, 0x0000) == .unsigned(200))
        #expect(try #require(rig.model.dataVersion(level)) != before)
    }

    @Test func aRefusedValueAnswersTheEnginesStatusAndChangesNothing() throws {
        let rig = try Rig(devices())
        let levelControl = try #require(rig.cluster(2, 0x0008))
        let version = rig.model.dataVersion(ConcreteClusterPath(endpoint: 2, cluster: 0x0008))
        // Level 255 is outside MoveToLevel's 0…254: CONSTRAINT_ERROR, as over MQTT.
        let refused = invoke(levelControl, 0x00, [TLVElement(context: 0, .uint(UInt8(255))),
                                                  TLVElement(context: 1, .uint(UInt16(0))),
                                                  TLVElement(context: 2, .uint(UInt8(0))),
                                                  TLVElement(context: 3, .uint(UInt8(0)))], endpoint: 2)
        guard case .failure(let error)? = refused else {
            Issue.record("accepted: \(String(describing: refused))"); return
        }
        #expect(error.status == .constraintError)
        // A field of the wrong kind: INVALID_COMMAND before the engine sees it.
        let wrongKind = invoke(levelControl, 0x00, [TLVElement(context: 0, .utf8("high"))], endpoint: 2)
        guard case .failure(let kind)? = wrongKind else { Issue.record("accepted a string level"); return }
        #expect(kind.status == .invalidCommand)
        #expect(rig.model.dataVersion(ConcreteClusterPath(endpoint: 2, cluster: 0x0008)) == version)
        #expect(rig.value(2, 0x0008, 0x0000) == .null || rig.value(2, 0x0008, 0x0000) != .unsigned(255))
    }

    @Test func renameFromMatterAndFromTheEngineIsNodeLabel() throws {
        let rig = try Rig(devices())
        let basic = try #require(rig.cluster(2, 0x0039))
        let result = Locked<IMError??>(nil)
        basic.write(0x0005, value: .utf8("Lamp by the window"), context: action(2)) { e in result.withLock { $0 = e } }
        #expect(result.withLock { $0 } == .some(nil))
        #expect(try rig.home.device("lamp").name == "Lamp by the window")
        let version = rig.model.dataVersion(ConcreteClusterPath(endpoint: 2, cluster: 0x0039))
        _ = try rig.home.setName("lamp", "Reading lamp")
        #expect(rig.value(2, 0x0039, 0x0005) == .utf8("Reading lamp"))
        #expect(rig.model.dataVersion(ConcreteClusterPath(endpoint: 2, cluster: 0x0039)) != version)
    }

    @Test func unreachableDevicesSayReachableFalse() throws {
        let rig = try Rig(devices())
        try rig.home.setConnectivity("lamp", trait: "onOff", SourceConnectivity(.offline, .direct))
        #expect(rig.value(2, 0x0039, 0x0011) == .bool(false))
        try rig.home.setConnectivity("lamp", trait: "onOff", .directOnline)
        #expect(rig.value(2, 0x0039, 0x0011) == .bool(true))
    }

    @Test func numbersSurviveRestartsAndConfigurationChanges() throws {
        let storage = InMemoryNodeStorage()
        _ = try Rig(devices(), storage: storage)
        // The switch leaves the configuration: the others keep their numbers, nobody gets 3.
        let without = try Rig(devices(withSwitch: false), storage: storage)
        #expect(without.bridge.endpoints(of: "plug") == ["OnOffPlugInUnit": 4, "OnOffLight": 5])
        #expect(without.model.endpointIDs == [0, 1, 2, 4, 5])
        // A new device gets a number never given before; the switch, back, gets its old one.
        var more = devices()
        more.append(DeviceConfiguration(id: "new", name: "New", isMatterDevice: true, types: [
            DeviceTypeConfiguration(.onOffLight),
        ]))
        let back = try Rig(more, storage: storage)
        #expect(back.bridge.endpoints(of: "switch") == ["GenericSwitch": 3])
        #expect(back.bridge.endpoints(of: "new") == ["OnOffLight": 6])
    }

    @Test func anUnreadableEndpointTableIsAnError() throws {
        let storage = InMemoryNodeStorage()
        try storage.store(EndpointNumbers.storageKey, [0x15, 0x18])
        #expect(throws: StorageError.self) { try EndpointNumbers(storage: storage) }
    }

    @Test func aHundredDevicesAreAllOnTheBridge() throws {
        let many = (0..<100).map { n in
            DeviceConfiguration(id: "light-\(n)", name: "Light \(n)", isMatterDevice: true, types: [
                DeviceTypeConfiguration(.dimmableLight),
            ])
        }
        let rig = try Rig(many)
        #expect(rig.model.endpointIDs.count == 102)
        let reports = rig.model.read([AttributePath()], context: read)
        let onOffs = reports.filter {
            if case .data(let data) = $0 { data.path.cluster == 0x0006 && data.path.attribute == 0 } else { false }
        }
        #expect(onOffs.count == 100)
    }
}
