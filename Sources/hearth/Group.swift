// `hearth group …`: home-wide groups and their scenes (docs/clusters/groups.md) on HearthKit's untyped layer. A group
// command is published once on `<prefix>/groups/<id>/set`; every hub with members answers with one summary.
import ArgumentParser
import HearthKit

struct Group: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "group",
        abstract: "Groups of devices across every hub, and their scenes.",
        discussion: """
            A group is a number (1…65535) that devices on any hub belong to (hearth.yaml's groups:, or group add). \
            A command sent to the group runs on every member of every hub; each hub answers with which of its members \
            ran it and which refused, and why.
            """,
        subcommands: [List.self, Send.self, Add.self, Remove.self, SceneCommand.self])

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list",
            abstract: "List every group's members on every hub, with their scenes (--json: as the hubs published).")
        @Argument(help: "Only this group.") var group: Int?
        @OptionGroup var global: GlobalOptions

        func run() async throws {
            try await reporting {
                let session = try await Session.connect(global)
                let members = session.home.groupMembers().filter { group == nil || $0.group == group }
                if global.json {
                    let rows: [JSON] = members.map { m in
                        .object([("group", .int(m.group)), ("hub", .string(m.hub)), ("device", .string(m.device)),
                                 ("type", .string(m.type)), ("name", .string(m.name)),
                                 ("scenes", .array(m.scenes.map { s in
                                     .object([("scene", .int(s.id)), ("name", .string(s.name)),
                                              ("transitionTime", .int(s.transitionTime))])
                                 }))])
                    }
                    Terminal.out(JSON.array(rows).text)
                    return
                }
                guard !members.isEmpty else {
                    throw CLIError(.notFound, group.map { "no hub has a member of group \($0)" }
                                   ?? "no hub has published any group (hearth.yaml's groups:, or hearth group add)")
                }
                let rows =
                    [["GROUP", "HUB", "DEVICE", "TYPE", "NAME", "SCENES"]]
                    + members.map { m in
                        [
                            String(m.group), m.hub, m.device, m.type, m.name,
                            m.scenes.map { s in
                                "\(s.id)" + (s.name.isEmpty ? "" : " \(s.name)")
                                    + " (\(Group.seconds(s.transitionTime)))"
                            }
                            .joined(separator: ", ")
                        ]
                    }
                Terminal.out(Render.table(rows.map { $0.map(Render.sanitized) }).joined(separator: "\n"))
            }
        }
    }

    struct Send: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "send",
            abstract: "Send a command to every member of a group (e.g. group send 5 onOff toggle).",
            discussion: valueRules
                + "\n\nPrints one line per hub: the members that ran it and those that refused (exit 1 "
                + "if any refused, 3 if a hub with members did not answer).")
        @Argument(help: "The group id.") var group: Int
        @Argument(help: "The trait, e.g. onOff, levelControl, scenesManagement.") var trait: String
        @Argument(help: "The command, e.g. toggle, moveToLevel.") var command: String
        @Argument(help: ArgumentHelp("The command's fields, e.g. level=127.", valueName: "key=value"))
        var fields: [String] = []
        @OptionGroup var global: GlobalOptions

        func validate() throws {
            try Group.validateGroup(group)
            _ = try ArgumentValues.parse(fields)
        }

        func run() async throws {
            let args = try ArgumentValues.parse(fields)
            try await Group.send(global, group: group, [("trait", .string(trait)), ("command", .string(command))]
                                 + (args.isEmpty ? [] : [("args", .object(args))]))
        }
    }

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "add", abstract: "Put a device into a group (addGroup on its hub).")
        @Argument(help: "The group id.") var group: Int
        @Argument(help: "The device's id.") var device: String
        @Option(help: "The group's name on this device (at most 16 bytes).") var name = ""
        @OptionGroup var global: GlobalOptions

        func validate() throws { try Group.validateGroup(group); try validateLevel(device, "device id") }

        func run() async throws {
            try await Group.onDevice(
                global, device: device,
                [
                    ("trait", .string("groups")), ("command", .string("addGroup")),
                    ("args", .object([("groupId", .int(group)), ("groupName", .string(name))]))
                ]
            ) { _ in
                "\(device) is in group \(group)"
            }
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "remove",
            abstract: "Take a device out of a group (removeGroup on its hub; its scenes of the group go too).")
        @Argument(help: "The group id.") var group: Int
        @Argument(help: "The device's id.") var device: String
        @OptionGroup var global: GlobalOptions

        func validate() throws { try Group.validateGroup(group); try validateLevel(device, "device id") }

        func run() async throws {
            try await Group.onDevice(
                global, device: device,
                [
                    ("trait", .string("groups")), ("command", .string("removeGroup")),
                    ("args", .object([("groupId", .int(group))]))
                ]
            ) { _ in "\(device) left group \(group)" }
        }
    }

    struct SceneCommand: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "scene", abstract: "Store, recall, view and remove a group's scenes.",
            subcommands: [Store.self, Recall.self, View.self, RemoveScene.self])

        struct Store: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "store",
                abstract: "Every member stores its state now (on, level) as the scene (storeScene).")
            @Argument(help: "The group id.") var group: Int
            @Argument(help: "The scene id (0…254).") var scene: Int
            @OptionGroup var global: GlobalOptions
            func validate() throws { try Group.validateGroup(group) }
            func run() async throws {
                try await Group.send(global, group: group, Group.sceneCommand("storeScene", group, scene))
            }
        }

        struct Recall: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "recall",
                abstract: "Every member moves to the scene, all within one transition (recallScene).")
            @Argument(help: "The group id.") var group: Int
            @Argument(help: "The scene id (0…254).") var scene: Int
            @Option(help: ArgumentHelp("The transition in milliseconds; default the scene's own.", valueName: "ms"))
            var transition: Int?
            @OptionGroup var global: GlobalOptions
            func validate() throws { try Group.validateGroup(group) }
            func run() async throws {
                try await Group.send(
                    global, group: group,
                    Group.sceneCommand(
                        "recallScene", group, scene,
                        transition.map { [("transitionTime", .int($0))] } ?? []))
            }
        }

        struct RemoveScene: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "remove", abstract: "Every member forgets the scene.")
            @Argument(help: "The group id.") var group: Int
            @Argument(help: "The scene id (0…254).") var scene: Int
            @OptionGroup var global: GlobalOptions
            func validate() throws { try Group.validateGroup(group) }
            func run() async throws {
                try await Group.send(global, group: group, Group.sceneCommand("removeScene", group, scene))
            }
        }

        struct View: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "view",
                abstract: "What each member stored for the scene (viewScene on every member).")
            @Argument(help: "The group id.") var group: Int
            @Argument(help: "The scene id (0…254).") var scene: Int
            @OptionGroup var global: GlobalOptions
            func validate() throws { try Group.validateGroup(group) }
            func run() async throws {
                try await reporting {
                    let session = try await Session.connect(global)
                    let members = session.home.groupMembers().filter { $0.group == group }
                    guard !members.isEmpty else { throw CLIError(.notFound, "no hub has a member of group \(group)") }
                    var failed: CLIError?
                    for m in members {
                        let answer = try await session.request(
                            HubTopics(prefix: global.prefix, hub: m.hub), device: m.device,
                            [("type", .string(m.type))] + Group.sceneCommand("viewScene", group, scene))
                        if global.json { Terminal.out(answer.json.text); continue }
                        guard answer.isOK, let r = answer.result else {
                            let e = hubFailure(answer)
                            Terminal.out("\(m.hub)/\(Render.sanitized(m.device)): \(e.message)")
                            failed = e
                            continue
                        }
                        let values = (r["extensionFieldSetStructs"]?.arrayValue ?? []).flatMap { set in
                            (set["attributeValueList"]?.arrayValue ?? []).map { pair in
                                "cluster \(set["clusterId"]?.intValue ?? 0) attribute "
                                    + "\(pair["attributeId"]?.intValue ?? 0) = "
                                    + "\(pair["value"]?.intValue ?? 0)"
                            }
                        }
                        Terminal.out("\(m.hub)/\(Render.sanitized(m.device)): scene \(scene) "
                            + "'\(Render.sanitized(r["sceneName"]?.stringValue ?? ""))', "
                            + "\(Group.seconds(r["transitionTime"]?.intValue ?? 0)); " + values.joined(separator: ", "))
                    }
                    if let failed { throw CLIError(failed.status, "") }
                }
            }
        }
    }

    // MARK: Shared

    static func validateGroup(_ group: Int) throws {
        guard (1...0xFFFF).contains(group) else {
            throw ValidationError("group \(group) is out of range; groups are 1…65535")
        }
    }

    static func sceneCommand(_ name: String, _ group: Int, _ scene: Int, _ more: [(key: String, value: JSON)] = [])
        -> [(key: String, value: JSON)] {
        [("trait", .string("scenesManagement")), ("command", .string(name)),
         ("args", .object([("groupId", .int(group)), ("sceneId", .int(scene))] + more))]
    }

    static func seconds(_ ms: Int) -> String {
        ms % 1000 == 0 ? "\(ms / 1000)s" : "\(Double(ms) / 1000)s"
    }

    /// Sends a group command and prints each hub's summary.
    static func send(_ global: GlobalOptions, group: Int, _ members: [(key: String, value: JSON)]) async throws {
        try await reporting {
            let session = try await Session.connect(global)
            let expected = Set(session.home.groupMembers().filter { $0.group == group }.map(\.hub))
            let summaries: [GroupSummary]
            do {
                summaries = try await session.home.sendToGroup(group, members, deadline: session.deadline)
            } catch let error as HomeError {
                throw CLIError(.brokerUnreachable, error.message)
            }
            if global.json {
                Terminal.out(JSON.array(summaries.map(\.json)).text)
            } else {
                for s in summaries {
                    var line =
                        "\(s.hub): ran "
                            + "\(s.ran.isEmpty ? "nothing" : s.ran.map(Render.sanitized).joined(separator: ", "))"
                    for r in s.refused {
                        line +=
                            "; \(Render.sanitized(r.device)) refused: \(r.error.code.rawValue) "
                                + "(\(r.error.status.rawValue)): "
                            + Render.sanitized(r.error.message)
                    }
                    Terminal.out(line)
                }
            }
            let silent = expected.subtracting(summaries.map(\.hub)).sorted()
            if expected.isEmpty { throw CLIError(.notFound, "no hub has a member of group \(group); sent anyway") }
            if !silent.isEmpty {
                throw CLIError(
                    .timeout, "no summary from \(silent.joined(separator: ", ")) within \(global.timeoutText)")
            }
            if summaries.contains(where: { !$0.isOK }) { throw CLIError(.hubError, "") }
        }
    }

    /// A request to one device, on its hub (--hub, else the hub whose device list has it, else the only hub online).
    static func onDevice(_ global: GlobalOptions, device: String, _ members: [(key: String, value: JSON)],
                         success: (HubAnswer) -> String) async throws {
        try await reporting {
            let session = try await Session.connect(global)
            let topics: HubTopics
            if global.resolvedHub == nil,
                let owner = session.hubStatuses().map(\.hub).first(where: { hub in
                    session.home.summary(ofHub: hub)?.json?.arrayValue.contains { $0["id"]?.stringValue == device }
                        == true
                })
            {
                topics = HubTopics(prefix: global.prefix, hub: owner)
            } else {
                topics = try session.resolveHub()
            }
            let answer = try await session.request(topics, device: device, members)
            if global.json { Terminal.out(answer.json.text); return }
            guard answer.isOK else { throw hubFailure(answer) }
            Terminal.out(success(answer))
        }
    }
}
