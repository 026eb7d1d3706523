public import HearthModel

/// Matter Groups (0x0004): which groups a device type (a Matter endpoint) is in, and each group's name
/// (`docs/clusters/groups.md`).
///
/// The table is the trait's own state, kept across restarts through ``table``; the hub subscribes to the group topics
/// of the groups it lists. Removing a group tells Scenes Management (a signal) to drop that group's scenes.
public struct GroupsServer: TraitServer {
    /// Groups one device type can be in: Matter's minimum group table of a light is 16 entries per fabric.
    public static let capacity = 16

    public static let nameSupportBitmap = BitmapType("NameSupportBitmap", [(7, "groupNames")])
    static let groupID = FieldDescriptor("groupId", .uint16, constraint: 1...0xFFFF)
    static let groupName = FieldDescriptor("groupName", .string(maxLength: 16))

    public enum Attribute {
        public static let nameSupport = AttributeDescriptor(id: 0x0000, name: "nameSupport",
                                                            type: .bitmap(nameSupportBitmap))
    }

    public enum Command {
        public static let addGroup = CommandDescriptor(id: 0x00, name: "addGroup", fields: [groupID, groupName],
                                                       response: [groupID])
        public static let viewGroup = CommandDescriptor(id: 0x01, name: "viewGroup", fields: [groupID],
                                                        response: [groupID, groupName])
        public static let getGroupMembership = CommandDescriptor(
            id: 0x02, name: "getGroupMembership",
            fields: [
                FieldDescriptor(
                    "groupList", .list(.uint16, maxCount: 0xFFFF), default: .list([]), constraint: 1...0xFFFF)
            ],
            response: [
                FieldDescriptor("capacity", .uint8, nullable: true),
                FieldDescriptor("groupList", .list(.uint16, maxCount: capacity)),
            ])
        public static let removeGroup = CommandDescriptor(
            id: 0x03, name: "removeGroup", fields: [groupID],
            response: [groupID])
        public static let removeAllGroups = CommandDescriptor(id: 0x04, name: "removeAllGroups")
        public static let addGroupIfIdentifying = CommandDescriptor(id: 0x05, name: "addGroupIfIdentifying",
                                                                    fields: [groupID, groupName])
    }

    public static let descriptor = TraitDescriptor(
        id: .groups, clusterID: 0x0004, revision: 4,
        features: [.init(bit: 0, "groupNames")], attributes: [Attribute.nameSupport],
        commands: [Command.addGroup, Command.viewGroup, Command.getGroupMembership, Command.removeGroup,
                   Command.removeAllGroups, Command.addGroupIfIdentifying])

    /// Group id → name ("" when the client gave none).
    public private(set) var groups: [UInt16: String] = [:]

    public static var readsEndpoint: Bool { true }

    public init(features: Set<String>) throws(HomeError) {
        for f in features where f != "groupNames" {
            throw .constraintError("groups has no feature '\(f)'; it has groupNames")
        }
    }

    public func read(_ id: UInt32) -> Value? {
        id == Attribute.nameSupport.id ? .int(0x80) : nil
    }

    public mutating func load(_ attribute: AttributeDescriptor, _ value: Value) throws(HomeError) {
        throw .unsupportedWrite("groups.\(attribute.name) is fixed; a device's groups are configured under `groups:`")
    }

    public mutating func invoke(_ arguments: CommandArguments, context: inout TraitContext) throws(HomeError) {
        switch arguments.command.id {
        case Command.addGroup.id:
            let id = UInt16(arguments.int("groupId")!)
            try add(id, name: arguments["groupName"].stringValue!, context: &context)
            context.respond(["groupId": .int(Int(id))])
        case Command.viewGroup.id:
            let id = UInt16(arguments.int("groupId")!)
            guard let name = groups[id] else { throw Self.notMember(id, groups) }
            context.respond(["groupId": .int(Int(id)), "groupName": .string(name)])
        case Command.getGroupMembership.id:
            let asked = Set((arguments["groupList"].listValue ?? []).compactMap(\.intValue))
            let list = groups.keys.sorted().filter { asked.isEmpty || asked.contains(Int($0)) }
            context.respond(["capacity": .int(Self.capacity - groups.count),
                             "groupList": .list(list.map { .int(Int($0)) })])
        case Command.removeGroup.id:
            let id = UInt16(arguments.int("groupId")!)
            guard groups.removeValue(forKey: id) != nil else { throw Self.notMember(id, groups) }
            context.post(.groupsRemoved([id]))
            context.tableDidChange()
            context.respond(["groupId": .int(Int(id))])
        case Command.removeAllGroups.id:
            if !groups.isEmpty { context.tableDidChange() }
            groups.removeAll()
            context.post(.groupsRemoved(nil))
        default:  // addGroupIfIdentifying
            // While Identify counts down the device joins; otherwise the command succeeds and does nothing (Matter).
            guard let identify = context.endpoint?.trait(IdentifyServer.self), identify.identifyTime > 0 else { return }
            try add(UInt16(arguments.int("groupId")!), name: arguments["groupName"].stringValue!, context: &context)
        }
    }

    private mutating func add(_ id: UInt16, name: String, context: inout TraitContext) throws(HomeError) {
        guard groups[id] != nil || groups.count < Self.capacity else {
            throw HomeError(.resourceExhausted, "the group table is full (\(Self.capacity) groups: "
                            + groups.keys.sorted().map(String.init).joined(separator: ", ")
                            + "); remove one with removeGroup first")
        }
        guard groups[id] != name else { return }
        groups[id] = name
        context.tableDidChange()
    }

    private static func notMember(_ id: UInt16, _ groups: [UInt16: String]) -> HomeError {
        .notFound(
            "not in group \(id); "
                + (groups.isEmpty
                    ? "in no group" : "its groups are " + groups.keys.sorted().map(String.init).joined(separator: ", "))
        )
    }

    /// `{"<id>": "<name>", …}`.
    public var table: Value? {
        .structure(Dictionary(uniqueKeysWithValues: groups.map { (String($0.key), Value.string($0.value)) }))
    }

    /// Adds (or renames) the groups of a table: the configured groups, then the saved ones over them.
    public mutating func restore(table: Value) throws(HomeError) {
        guard case .structure(let entries) = table else {
            throw .invalidDataType("a group table must be a mapping of ids to names")
        }
        var skipped: [String] = []
        for (key, value) in entries.sorted(by: { $0.key < $1.key }) {
            guard let id = UInt16(key), id > 0, case .string(let name) = value, name.utf8.count <= 16,
                  groups[id] != nil || groups.count < Self.capacity
            else { skipped.append(key); continue }
            groups[id] = name
        }
        if !skipped.isEmpty {
            throw .constraintError(
                "group(s) \(skipped.joined(separator: ", ")) skipped: ids are 1…65535, names at most "
                    + "16 bytes, at most \(Self.capacity) groups")
        }
    }
}
