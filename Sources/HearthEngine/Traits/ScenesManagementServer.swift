public import HearthModel

/// Matter Scenes Management (0x0062): scenes per group, stored from the endpoint's scene-capable traits and recalled
/// with a transition (`docs/clusters/scenes-management.md`).
///
/// The trait knows no other trait by name: storing reads every ``SceneCapable`` trait's
/// ``SceneCapable/sceneAttributes`` through ``TraitContext/endpoint``, and recalling posts
/// ``EndpointSignal/recallScene(_:)``, which each of them applies to itself. A trait joins scenes by conforming to
/// ``SceneCapable``.
public struct ScenesManagementServer: TraitServer {
    /// Scenes one device type holds (Matter's SceneTableSize; 16 is the spec's default).
    public static let capacity = 16
    /// Matter: TransitionTime is at most 60 000 000 ms (1000 minutes).
    public static let maxTransitionTime = 60_000_000

    static let groupID = FieldDescriptor("groupId", .uint16)
    static let sceneID = FieldDescriptor("sceneId", .uint8, constraint: 0...254)
    static let transitionTime = FieldDescriptor("transitionTime", .uint32, constraint: 0...maxTransitionTime)
    static let sceneName = FieldDescriptor("sceneName", .string(maxLength: 16))

    public static let attributeValuePair = StructType(
        "AttributeValuePairStruct",
        [
            FieldDescriptor("attributeId", .uint32),
            // Matter has ValueUnsigned8 … ValueSigned64, one per width; JSON numbers carry their own, so one field.
            FieldDescriptor("value", .uint32),
        ])
    public static let extensionFieldSet = StructType(
        "ExtensionFieldSetStruct",
        [
            FieldDescriptor("clusterId", .uint32),
            FieldDescriptor("attributeValueList", .list(.structure(attributeValuePair), maxCount: 16)),
        ])
    static let extensionFieldSets = FieldDescriptor(
        "extensionFieldSetStructs", .list(.structure(extensionFieldSet), maxCount: 16),
        default: .list([]))
    public static let sceneInfo = StructType(
        "SceneInfoStruct",
        [
            FieldDescriptor("sceneCount", .uint8),
            FieldDescriptor("currentScene", .uint8),
            FieldDescriptor("currentGroup", .uint16),
            FieldDescriptor("sceneValid", .bool),
            FieldDescriptor("remainingCapacity", .uint8),
        ])

    public enum Attribute {
        public static let sceneTableSize = AttributeDescriptor(id: 0x0001, name: "sceneTableSize", type: .uint16)
        public static let fabricSceneInfo = AttributeDescriptor(id: 0x0002, name: "fabricSceneInfo",
                                                                type: .list(.structure(sceneInfo), maxCount: 1),
                                                                changedByCommands: true)
    }

    public enum Command {
        public static let addScene = CommandDescriptor(
            id: 0x00, name: "addScene", fields: [groupID, sceneID, transitionTime, sceneName, extensionFieldSets],
            response: [groupID, sceneID])
        public static let viewScene = CommandDescriptor(
            id: 0x01, name: "viewScene", fields: [groupID, sceneID],
            response: [groupID, sceneID, transitionTime, sceneName, extensionFieldSets])
        public static let removeScene = CommandDescriptor(
            id: 0x02, name: "removeScene", fields: [groupID, sceneID],
            response: [groupID, sceneID])
        public static let removeAllScenes = CommandDescriptor(
            id: 0x03, name: "removeAllScenes", fields: [groupID],
            response: [groupID])
        public static let storeScene = CommandDescriptor(
            id: 0x04, name: "storeScene", fields: [groupID, sceneID],
            response: [groupID, sceneID])
        public static let recallScene = CommandDescriptor(
            id: 0x05, name: "recallScene",
            fields: [
                groupID, sceneID,
                // Left out or null: the scene's own transition time.
                FieldDescriptor(
                    "transitionTime", .uint32, nullable: true, default: .null, constraint: 0...maxTransitionTime),
            ])
        public static let getSceneMembership = CommandDescriptor(
            id: 0x06, name: "getSceneMembership", fields: [groupID],
            response: [FieldDescriptor("capacity", .uint8, nullable: true), groupID,
                       FieldDescriptor("sceneList", .list(.uint8, maxCount: capacity))])
    }

    public static let descriptor = TraitDescriptor(
        id: .scenesManagement, clusterID: 0x0062, revision: 1,
        features: [.init(bit: 0, "sceneNames")],
        attributes: [Attribute.sceneTableSize, Attribute.fabricSceneInfo],
        commands: [Command.addScene, Command.viewScene, Command.removeScene, Command.removeAllScenes,
                   Command.storeScene, Command.recallScene, Command.getSceneMembership])

    /// One scene: what Matter's logical scene table holds.
    public struct Scene: Sendable, Hashable {
        public var name: String
        /// Milliseconds.
        public var transitionTime: Int
        /// Cluster id → attribute id → value.
        public var values: [UInt32: [UInt32: Value]]
    }

    public struct Key: Sendable, Hashable, Comparable {
        public var group: UInt16
        public var scene: UInt8
        public static func < (a: Key, b: Key) -> Bool { (a.group, a.scene) < (b.group, b.scene) }
    }

    public private(set) var scenes: [Key: Scene] = [:] { didSet { refreshSceneInfo() } }
    /// The scene last recalled or stored, until its group's scenes go.
    private var current: Key? { didSet { refreshSceneInfo() } }
    /// Matter's SceneValid: the endpoint is as `current` says, until a client changes an attribute a scene stores.
    public private(set) var isSceneValid = false { didSet { refreshSceneInfo() } }
    /// FabricSceneInfo's list, built when what it says changes rather than on each read: the engine reads it before
    /// and after every command to the endpoint, and the document writer on every publication, and building its
    /// structure (a dictionary of five fields) was a quarter of a toggle's engine work. Kept as the list's array, not
    /// a `Value`, so that the trait still fits an existential's inline buffer (three words) and an unchanged list
    /// compares equal by identity.
    private var sceneInfo: [Value] = Self.noSceneInfo

    /// A client changed something a scene stores: the current scene no longer describes the endpoint.
    mutating func invalidateScene() { isSceneValid = false }

    public static var readsEndpoint: Bool { true }
    public static var listensToSignals: Bool { true }

    public init(features: Set<String>) throws(HomeError) {
        for f in features where f != "sceneNames" {
            throw .constraintError("scenesManagement has no feature '\(f)'; it has sceneNames")
        }
    }

    public func read(_ id: UInt32) -> Value? {
        switch id {
        case Attribute.sceneTableSize.id: .int(Self.capacity)
        case Attribute.fabricSceneInfo.id: .list(sceneInfo)
        default: nil
        }
    }

    /// A device's list before any scene is stored, shared: unchanged lists of every such device compare equal by
    /// identity, also in the document writer (which keeps the bytes of the last list it wrote).
    private static let noSceneInfo: [Value] = [.structure([
        "sceneCount": .int(0), "currentScene": .int(0xFF), "currentGroup": .int(0), "sceneValid": .bool(false),
        "remainingCapacity": .int(capacity),
    ])]

    private static func makeSceneInfo(count: Int, current: Key?, valid: Bool) -> [Value] {
        if count == 0 && current == nil { return noSceneInfo }
        return [.structure([
            "sceneCount": .int(count),
            "currentScene": .int(Int(current?.scene ?? 0xFF)),
            "currentGroup": .int(Int(current?.group ?? 0)),
            "sceneValid": .bool(current != nil && valid),
            "remainingCapacity": .int(capacity - count),
        ])]
    }

    private mutating func refreshSceneInfo() {
        let info = Self.makeSceneInfo(count: scenes.count, current: current, valid: isSceneValid)
        if info != sceneInfo { sceneInfo = info }
    }

    public mutating func load(_ attribute: AttributeDescriptor, _ value: Value) throws(HomeError) {
        throw .unsupportedWrite(
            "scenesManagement.\(attribute.name) is not configurable; scenes are configured under `groups:`")
    }

    public mutating func invoke(_ arguments: CommandArguments, context: inout TraitContext) throws(HomeError) {
        let command = arguments.command
        let group = UInt16(arguments.int("groupId")!)
        // Matter: a group the endpoint is not in is INVALID_COMMAND for every command (0 is the global scene's group).
        if group != 0 {
            let groups = context.endpoint?.trait(GroupsServer.self)?.groups ?? [:]
            guard groups[group] != nil else {
                throw .invalidCommand(
                    "\(command.name): the device is not in group \(group)"
                        + (groups.isEmpty
                            ? "; it is in no group"
                            : "; its groups are " + groups.keys.sorted().map(String.init).joined(separator: ", ")))
            }
        }
        if command.id == Command.getSceneMembership.id {
            let list = scenes.keys.filter { $0.group == group }.sorted().map { Value.int(Int($0.scene)) }
            context.respond([
                "capacity": .int(Self.capacity - scenes.count), "groupId": .int(Int(group)), "sceneList": .list(list),
            ])
            return
        }
        if command.id == Command.removeAllScenes.id {
            removeScenes { $0.group == group }
            context.tableDidChange()
            context.respond(["groupId": .int(Int(group))])
            return
        }
        let key = Key(group: group, scene: UInt8(arguments.int("sceneId")!))
        let answer: [String: Value] = ["groupId": .int(Int(group)), "sceneId": .int(Int(key.scene))]
        switch command.id {
        case Command.addScene.id:
            let values = try Self.values(
                arguments["extensionFieldSetStructs"], endpoint: context.endpoint, command: command.name)
            try makeRoom(for: key)
            scenes[key] = Scene(
                name: arguments["sceneName"].stringValue!, transitionTime: arguments.int("transitionTime")!,
                values: values)
            context.tableDidChange()
            context.respond(answer)
        case Command.viewScene.id:
            guard let scene = scenes[key] else { throw notFound(key) }
            context.respond(answer.merging([
                "transitionTime": .int(scene.transitionTime), "sceneName": .string(scene.name),
                "extensionFieldSetStructs": Self.fieldSets(scene.values),
            ]) { a, _ in a })
        case Command.removeScene.id:
            guard scenes.removeValue(forKey: key) != nil else { throw notFound(key) }
            if current == key { current = nil }
            context.tableDidChange()
            context.respond(answer)
        case Command.storeScene.id:
            try makeRoom(for: key)
            // Matter: an existing scene keeps its name and transition time; its values are replaced.
            let old = scenes[key]
            scenes[key] = Scene(name: old?.name ?? "", transitionTime: old?.transitionTime ?? 0,
                                values: context.endpoint?.sceneValues ?? [:])
            current = key
            isSceneValid = true
            context.tableDidChange()
            context.respond(answer)
        default:  // recallScene
            guard let scene = scenes[key] else { throw notFound(key) }
            let time = arguments["transitionTime"].intValue ?? scene.transitionTime
            current = key
            isSceneValid = true
            context.post(
                .recallScene(SceneRecall(values: scene.values, transitionTime: time, wasOn: context.output.onOff)))
        }
    }

    private mutating func makeRoom(for key: Key) throws(HomeError) {
        guard scenes[key] != nil || scenes.count < Self.capacity else {
            throw HomeError(.resourceExhausted, "the scene table is full (\(Self.capacity) scenes); remove one with "
                            + "removeScene or removeAllScenes first")
        }
    }

    private func notFound(_ key: Key) -> HomeError {
        let here = scenes.keys.filter { $0.group == key.group }.sorted().map { String($0.scene) }
        return .notFound("group \(key.group) has no scene \(key.scene)"
                         + (here.isEmpty ? "; it has no scenes" : "; its scenes are \(here.joined(separator: ", "))"))
    }

    private mutating func removeScenes(where predicate: (Key) -> Bool) {
        for key in scenes.keys where predicate(key) { scenes.removeValue(forKey: key) }
        if let c = current, predicate(c) {
            current = nil
            isSceneValid = false
        }
    }

    public mutating func receive(_ signal: EndpointSignal, context: inout TraitContext) {
        guard case .groupsRemoved(let groups) = signal else { return }
        // Matter: the scenes of a removed group SHOULD be removed; RemoveAllGroups removes the global scene's too.
        let before = scenes.count
        if let groups { removeScenes { groups.contains($0.group) } } else { removeScenes { _ in true } }
        if scenes.count != before { context.tableDidChange() }
    }

    /// A client's extension field sets as stored values: clusters the endpoint has no scene-capable trait for are
    /// ignored (Matter), an attribute a scene does not capture is refused, values are checked against the attribute.
    static func values(_ sets: Value, endpoint: EndpointView?, command: String) throws(HomeError) -> [UInt32: [UInt32:
        Value]]
    {
        let capturable = endpoint?.sceneAttributes ?? [:]
        var result: [UInt32: [UInt32: Value]] = [:]
        for set in sets.listValue ?? [] {
            guard let fields = set.structureValue, let cluster = fields["clusterId"]?.intValue.map(UInt32.init),
                let attributes = capturable[cluster],
                let descriptor = endpoint?.traits.first(where: { type(of: $0).descriptor.clusterID == cluster }).map({
                    type(of: $0).descriptor
                })
            else { continue }
            for pair in fields["attributeValueList"]?.listValue ?? [] {
                guard let p = pair.structureValue, let id = p["attributeId"]?.intValue.map(UInt32.init),
                      let raw = p["value"]?.intValue else { continue }
                guard attributes.contains(id), let attribute = descriptor.attribute(id: id) else {
                    throw .invalidCommand(
                        "\(command): \(descriptor.id) attribute \(id) is not one a scene stores; "
                            + "it stores "
                            + attributes.compactMap { a in descriptor.attribute(id: a).map { "\($0.id) (\($0.name))" } }
                            .joined(separator: ", "))
                }
                let value: Value
                if attribute.type == .bool {
                    guard raw == 0 || raw == 1 else {
                        throw .constraintError(
                            "\(command): \(descriptor.id).\(attribute.name) is a bool: its value is 0 or 1, not \(raw)")
                    }
                    value = .bool(raw == 1)
                } else {
                    value = .int(raw)
                    try attribute.type.check(value, nullable: false, constraint: attribute.constraint,
                                             what: "\(command): \(descriptor.id).\(attribute.name)")
                }
                result[cluster, default: [:]][id] = value
            }
        }
        return result
    }

    /// Stored values as Matter's extension field sets, in cluster then attribute order.
    static func fieldSets(_ values: [UInt32: [UInt32: Value]]) -> Value {
        .list(
            values.keys.sorted().map { cluster in
                .structure([
                    "clusterId": .int(Int(cluster)),
                    "attributeValueList": .list(
                        values[cluster]!.keys.sorted().map { id in
                            let v = values[cluster]![id]!
                            return .structure([
                                "attributeId": .int(Int(id)),
                                "value": .int(v.boolValue.map { $0 ? 1 : 0 } ?? v.intValue ?? 0),
                            ])
                        }),
                ])
            })
    }

    /// `{"<group>/<scene>": {"name": …, "transitionTime": ms, "values": {"<cluster>": {"<attribute>": value}}},
    /// …}`.
    public var table: Value? {
        .structure(
            Dictionary(
                uniqueKeysWithValues: scenes.map { key, scene in
                    (
                        "\(key.group)/\(key.scene)",
                        Value.structure([
                            "name": .string(scene.name), "transitionTime": .int(scene.transitionTime),
                            "values": .structure(
                                Dictionary(
                                    uniqueKeysWithValues: scene.values.map { cluster, attributes in
                                        (
                                            String(cluster),
                                            Value.structure(
                                                Dictionary(
                                                    uniqueKeysWithValues: attributes.map { (String($0.key), $0.value) })
                                            )
                                        )
                                    })),
                        ])
                    )
                }))
    }

    /// Adds (or replaces) the scenes of a table (``table``'s form): the configured ones, then the saved ones over them.
    /// A scene's values are kept as given; each trait checks its own when the scene is recalled.
    public mutating func restore(table: Value) throws(HomeError) {
        guard case .structure(let entries) = table else { throw .invalidDataType("a scene table must be a mapping") }
        var skipped: [String] = []
        for (key, value) in entries.sorted(by: { $0.key < $1.key }) {
            let parts = key.split(separator: "/")
            guard parts.count == 2, let g = UInt16(parts[0]), let s = UInt8(parts[1]), s <= 254,
                  case .structure(let f) = value, case .string(let name)? = f["name"], name.utf8.count <= 16,
                  case .int(let time)? = f["transitionTime"], (0...Self.maxTransitionTime).contains(time)
            else { skipped.append(key); continue }
            let k = Key(group: g, scene: s)
            guard scenes[k] != nil || scenes.count < Self.capacity else { skipped.append(key); continue }
            var values: [UInt32: [UInt32: Value]] = [:]
            for (cluster, attributes) in f["values"]?.structureValue ?? [:] {
                guard let c = UInt32(cluster) else { continue }
                for (attribute, v) in attributes.structureValue ?? [:] {
                    if let a = UInt32(attribute) { values[c, default: [:]][a] = v }
                }
            }
            scenes[k] = Scene(name: name, transitionTime: time, values: values)
        }
        if !skipped.isEmpty {
            throw .constraintError(
                "scene(s) \(skipped.joined(separator: ", ")) skipped: keys are <group>/<scene 0…254>, "
                    + "names at most 16 bytes, transition times 0…\(Self.maxTransitionTime) ms, at most "
                    + "\(Self.capacity) scenes")
        }
    }
}
