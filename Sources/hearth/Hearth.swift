// `hearth`: the command-line client of Hearth hubs. It speaks only the MQTT contract of docs/mqtt-api.md, through
// HearthKit's untyped layer (the library's one client path).
import ArgumentParser
import Dispatch
import HearthKit
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@main
struct Hearth: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hearth",
        abstract: "Talk to Hearth hubs over MQTT: list, read, watch and control their devices.",
        discussion: """
            Every command takes the connection options (--broker, --hub, --prefix, --username, --password, \
            --password-file, --tls, --ca-file, --cert, --key, --insecure, --timeout) and --json, which prints the \
            hub's raw JSON (device list, device documents, responses) for scripts.

            Exit status:
              0  success
              1  the hub refused the request (error: <code> (<status>): <message>)
              2  no such device: the hub's notFound, or not in the hub's device list
              3  no answer (or no data) from the hub within --timeout
              4  the broker is unreachable or refused the connection
              5  no hub: none online, several online without --hub, or it is offline
             64  bad command line
            """,
        subcommands: [Devices.self, Get.self, Watch.self, SetCommand.self, Update.self, Rename.self, Room.self,
                      Structure.self, Hubs.self, Group.self])
}

// MARK: - Shared

/// Runs a command body: a `CLIError` becomes `error: …` on stderr and its exit status.
func reporting(_ body: () async throws -> Void) async throws {
    do {
        try await body()
    } catch let error as CLIError {
        if !error.message.isEmpty { Terminal.err("error: \(error.message)") }
        if error.status != .success { throw ExitCode(error.status.rawValue) }
    }
}

/// The error a hub answered with, for stderr and the exit status.
func hubFailure(_ answer: HubAnswer) -> CLIError {
    let error = answer.json["error"]
    let code = error?["code"]?.stringValue ?? "unknown"
    let status = error?["status"]?.stringValue ?? "unknown"
    let message = error?["message"]?.stringValue ?? "(no message)"
    return CLIError(code == "notFound" ? .notFound : .hubError,
                    "\(Render.sanitized(code)) (\(Render.sanitized(status))): \(Render.sanitized(message))")
}

func notFound(_ device: String, _ topics: HubTopics) -> CLIError {
    CLIError(.notFound,
             "notFound (notFound): no device '\(Render.sanitized(device))' on hub '\(topics.hub)'; see hearth devices")
}

func validateLevel(_ id: String, _ what: String) throws {
    if let problem = Home.problem(withID: id) {
        throw ValidationError("\(what) '\(id)' cannot be used: \(problem)")
    }
}

/// What the hub published: its device list and its devices' documents.
struct Snapshot {
    var summary: JSON?
    var documents: [String: PublishedMessage] = [:]
    var complete = false

    func deviceIDs() -> [String]? {
        summary.map { $0.arrayValue.compactMap { $0["id"]?.stringValue } }
    }
}

extension Session {
    /// What the hub published: its device list and, if given, one device's document.
    func snapshot(_ topics: HubTopics, device: String?) -> Snapshot {
        var snapshot = Snapshot(summary: home.summary(ofHub: topics.hub)?.json, complete: isSettled)
        if let device, let document = home.document(ofHub: topics.hub, device: device) {
            snapshot.documents[device] = document
        }
        return snapshot
    }

    /// A command that is one request: connects, finds the hub, `perform`s, and reports failures as every command does.
    static func perform(_ global: GlobalOptions, device: String,
                        _ members: (JSON?) throws -> [(key: String, value: JSON)],
                        success: (HubAnswer, JSON?) -> Void) async throws {
        try await reporting {
            let session = try await connect(global)
            try await session.perform(try session.resolveHub(), device: device, members, success: success)
        }
    }

    /// Sends a request for `device` and prints the outcome. The hub publishes the device's document before it
    /// answers, so `success` sees the state after the request.
    func perform(_ topics: HubTopics, device: String, _ members: (JSON?) throws -> [(key: String, value: JSON)],
                 success: (HubAnswer, JSON?) -> Void) async throws {
        let before = home.document(ofHub: topics.hub, device: device)?.json
        let answer = try await request(topics, device: device, try members(before))
        if options.json { Terminal.emit(String(decoding: answer.payload, as: UTF8.self) + "\n", to: 1) }
        guard answer.isOK else { throw hubFailure(answer) }
        if !options.json { success(answer, home.document(ofHub: topics.hub, device: device)?.json) }
    }
}

// MARK: - devices

struct Devices: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "devices",
        abstract: "List the hub's devices.",
        discussion: "Columns: id, name, room, device types (* marks the primary one of a device with several), "
            + "connectivity and locality. With --json: the hub's device summary as published.")

    @OptionGroup var global: GlobalOptions

    @Flag(help: "The whole home as this hub sees it: its own devices and every peer hub's, each with its hub.")
    var all = false

    func run() async throws {
        try await reporting {
            let session = try await Session.connect(global)
            let topics = try session.resolveHub()
            if all {
                guard let home = session.home.homeView(ofHub: topics.hub)?.json else {
                    throw CLIError(.timeout, "hub '\(topics.hub)' has published no view of the home (\(topics.home))")
                }
                if global.json {
                    Terminal.emit(home.text + "\n", to: 1)
                } else {
                    Terminal.out(Render.deviceTable(home, withHub: true).joined(separator: "\n"))
                }
                return
            }
            let snapshot = session.snapshot(topics, device: nil)
            guard let summary = snapshot.summary else {
                throw CLIError(
                    .timeout,
                    snapshot.complete
                        ? "hub '\(topics.hub)' has published no device list (\(topics.devices)); is it a Hearth hub?"
                        : "no device list from hub '\(topics.hub)' within \(global.timeoutText); is it online? (hearth "
                            + "hubs)")
            }
            if global.json {
                Terminal.emit(summary.text + "\n", to: 1)
            } else if summary.arrayValue.isEmpty {
                Terminal.out("hub '\(topics.hub)' has no devices")
            } else {
                Terminal.out(Render.deviceTable(summary).joined(separator: "\n"))
            }
        }
    }
}

// MARK: - get

struct Get: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get",
        abstract: "Show one device: its types, each trait's attributes and commands.",
        discussion: """
            Attributes the device does not support are shown as '-  not supported'; a supported attribute that is \
            null is shown as 'null' and marked nullable. Bitmaps are shown as {flag,flag} (the flags that are set), \
            the way 'hearth set' and 'hearth update' read them. With --json: the device's document as published.
            """)

    @Argument(help: "The device's id (see hearth devices).") var device: String
    @Flag(name: .long, help: "Ask the hub to re-read the device's hardware first.") var refresh = false
    @OptionGroup var global: GlobalOptions

    func validate() throws { try validateLevel(device, "device id") }

    func run() async throws {
        try await reporting {
            let session = try await Session.connect(global)
            let topics = try session.resolveHub()
            if refresh {
                let answer = try await session.request(topics, device: device, [("get", .bool(true))])
                guard answer.isOK else { throw hubFailure(answer) }
            }
            let snapshot = session.snapshot(topics, device: device)
            if let ids = snapshot.deviceIDs(), !ids.contains(device) { throw notFound(device, topics) }
            guard let document = snapshot.documents[device] else {
                if snapshot.complete && snapshot.summary != nil { throw notFound(device, topics) }
                throw CLIError(
                    .timeout,
                    "no document for '\(Render.sanitized(device))' from hub '\(topics.hub)' within "
                        + "\(global.timeoutText); is it online? (hearth hubs)")
            }
            if global.json {
                Terminal.emit(String(decoding: document.payload, as: UTF8.self) + "\n", to: 1)
            } else {
                Terminal.out(Render.device(document.json ?? .null).joined(separator: "\n"))
            }
        }
    }
}

// MARK: - watch

struct Watch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Print every change of the hub's devices (or of one) as it is published.",
        discussion: """
            One line per published document that differs from the one before: the time, the device and what \
            changed (trait.attribute: old → new; a trait on several types of the device is named Type.trait). \
            A document republished unchanged prints nothing. Hub status changes print a line too. Runs until \
            Ctrl-C, or until --count lines. With --json: each changed document as published, one per line.
            """)

    @Argument(help: "Only this device.") var device: String?
    @Option(name: .long, help: ArgumentHelp("Stop after this many lines.", valueName: "n")) var count: Int?
    @OptionGroup var global: GlobalOptions

    func validate() throws {
        if let device { try validateLevel(device, "device id") }
        if let count, count < 1 { throw ValidationError("--count must be at least 1") }
    }

    func run() async throws {
        try await reporting {
            let session = try await Session.connect(global)
            let home = session.home
            // Lost and restored connections are told on stderr; the watch goes on.
            let connection = Task {
                for await change in home.connectionChanges() {
                    switch change {
                    case .lost(let detail): Terminal.err("connection to the broker lost (\(detail)); reconnecting…")
                    case .restored: Terminal.err("reconnected")
                    }
                }
            }
            defer { connection.cancel() }
            // Ctrl-C and SIGTERM end the watch normally (exit 0, clean DISCONNECT): closing the home ends the stream.
            var sources: [any DispatchSourceSignal] = []
            for sig in [SIGINT, SIGTERM] {
                signal(sig, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
                source.setEventHandler { home.close() }
                source.resume()
                sources.append(source)
            }
            defer { for source in sources { source.cancel() } }

            let topics = try session.resolveHub(requireOnline: false)
            var snapshot = Snapshot(complete: session.isSettled)
            var status: String?
            var live = false
            var printed = 0
            func emit(_ line: String) -> Bool {
                Terminal.out(line)
                printed += 1
                return count.map { printed >= $0 } ?? false
            }
            // First what the hub has published (replayed), then every change as it arrives.
            for await update in home.updates() {
                switch update {
                case .live:
                    if let device, snapshot.complete, snapshot.documents[device] == nil,
                       let ids = snapshot.deviceIDs(), !ids.contains(device) {
                        throw notFound(device, topics)
                    }
                    let what = device.map { "'\(Render.sanitized($0))'" } ?? "\(snapshot.documents.count) devices"
                    Terminal.err(
                        "watching \(what) on hub '\(topics.hub)'\(status.map { " (\($0))" } ?? ""); Ctrl-C to stop")
                    live = true
                case .status(let hub, let new):
                    guard hub == topics.hub, let new else { continue }
                    guard live else {
                        status = new
                        continue
                    }
                    guard new != status else { continue }
                    status = new
                    if !global.json, emit("\(Render.clock())  hub '\(topics.hub)' is \(Render.sanitized(new))") {
                        return
                    }
                case .summary(let hub, let summary):
                    if hub == topics.hub { snapshot.summary = summary?.json }
                case .document(let hub, let id, let new):
                    guard hub == topics.hub, device == nil || id == device else { continue }
                    let old = snapshot.documents[id]
                    snapshot.documents[id] = new
                    guard live else { continue }
                    let line: String
                    switch (old?.json, new?.json) {
                    case (nil, nil): continue
                    case (let old?, let new?):
                        let changes = Render.changes(from: old, to: new)
                        guard !changes.isEmpty else { continue }
                        line = changes.joined(separator: "; ")
                    case (nil, let new?):
                        line = "appeared: \(Render.value(new["name"] ?? .null))"
                    case (_?, nil):
                        line = "removed"
                    }
                    if global.json {
                        guard let new else { continue }
                        if emit(new.text) { return }
                    } else if emit("\(Render.clock())  \(Render.sanitized(id))  \(line)") {
                        return
                    }
                }
            }
        }
    }
}

// MARK: - set / update

let valueRules = """
    Values (key=value): null, true and false are JSON's; -12 and 300 are integers; other words are strings, which \
    is how enums are sent (startUpOnOff=toggle, effectIdentifier=dyingLight). Bitmaps: {} sets no flag; \
    a,b or {a,b} sets those flags ({"a":true,"b":true}; flags not named are false); a single name is a one-flag \
    bitmap for a command field named …Mask, …Override or …Control (optionsMask=executeIfOff) and for an \
    attribute whose value is a bitmap (options=executeIfOff). key:=JSON sends JSON as written (name:='"42"', \
    optionsMask:='{"executeIfOff":true}'). The hub checks every value and answers with a precise error.
    """

struct SetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set",
        abstract: "Send a command to a trait of a device (e.g. set relay onOff toggle).",
        discussion: valueRules
            + "\n\nOn success, prints the trait's attributes after the command (--json: the hub's response).")

    @Argument(help: "The device's id.") var device: String
    @Argument(help: "The trait, e.g. onOff, levelControl.") var trait: String
    @Argument(help: "The command, e.g. toggle, moveToLevel.") var command: String
    @Argument(help: ArgumentHelp("The command's fields, e.g. level=127 transitionTime=0.", valueName: "key=value"))
    var fields: [String] = []
    @Option(name: .long, help: ArgumentHelp("The device type, when several types of the device have the trait.",
                                            valueName: "type"))
    var type: String?
    @OptionGroup var global: GlobalOptions

    func validate() throws {
        try validateLevel(device, "device id")
        _ = try ArgumentValues.parse(fields)
    }

    func run() async throws {
        try await performOnTrait(global, device: device, type: type, trait: trait) { _ in
            let args = try ArgumentValues.parse(fields)
            return [("command", .string(command))] + (args.isEmpty ? [] : [("args", .object(args))])
        }
    }
}

/// `set` and `update`: a request to one trait of a device, answered by printing that trait's attributes.
private func performOnTrait(_ global: GlobalOptions, device: String, type: String?, trait: String,
                            _ action: (JSON?) throws -> [(key: String, value: JSON)]) async throws {
    try await Session.perform(global, device: device, { document in
        var members: [(key: String, value: JSON)] = type.map { [("type", .string($0))] } ?? []
        members.append(("trait", .string(trait)))
        return members + (try action(document))
    }, success: { answer, document in
        // A command that answers with data (viewGroup, viewScene, …) prints it; the others print the trait's state.
        if let result = answer.result { return Terminal.out(result.text) }
        Terminal.out(document.flatMap { Render.traitState($0, type: type, trait: trait) } ?? "ok")
    })
}

struct Update: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "update",
        abstract: "Write attributes of a trait (e.g. update relay onOff startUpOnOff=toggle onTime=30).",
        discussion: valueRules + "\n\nAll attributes are written or none. On success, prints the trait's attributes "
            + "(--json: the hub's response).")

    @Argument(help: "The device's id.") var device: String
    @Argument(help: "The trait, e.g. onOff.") var trait: String
    @Argument(help: ArgumentHelp("The attributes to write.", valueName: "key=value")) var attributes: [String]
    @Option(name: .long, help: ArgumentHelp("The device type, when several types of the device have the trait.",
                                            valueName: "type"))
    var type: String?
    @OptionGroup var global: GlobalOptions

    func validate() throws {
        try validateLevel(device, "device id")
        guard !attributes.isEmpty else { throw ValidationError("name at least one attribute to write (key=value)") }
        _ = try ArgumentValues.parse(attributes)
    }

    func run() async throws {
        try await performOnTrait(global, device: device, type: type, trait: trait) { document in
            // Attributes whose current value is a bitmap read a single flag name as that flag.
            var bitmaps = Set<String>()
            for t in document?["types"]?.arrayValue ?? [] where type == nil || t["type"]?.stringValue == type {
                for (name, value) in t["traits"]?[trait]?["attributes"]?.members ?? [] {
                    if case .object = value { bitmaps.insert(name) }
                }
            }
            return [("update", .object(try ArgumentValues.parse(attributes, bitmapNames: bitmaps)))]
        }
    }
}

// MARK: - rename / room

struct Rename: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rename",
        abstract: "Rename a device; prints the name as the hub stored it.",
        discussion: "The hub keeps at most 60 Unicode code points and cuts the rest (a note on stderr says so).")

    @Argument(help: "The device's id.") var device: String
    @Argument(help: "The new name (quote it if it has spaces).") var name: String
    @OptionGroup var global: GlobalOptions

    func validate() throws { try validateLevel(device, "device id") }

    func run() async throws {
        try await Session.perform(global, device: device, { _ in [("setName", .string(name))] }) { answer, _ in
            let stored = answer.json["result"]?["name"]?.stringValue ?? name
            Terminal.out(Render.sanitized(stored))
            if stored != name {
                Terminal.err("note: the hub stored \(stored.unicodeScalars.count) of the name's "
                    + "\(name.unicodeScalars.count) code points")
            }
        }
    }
}

struct Room: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "room", abstract: "Put a device in a room, or take it out with --clear.")

    @Argument(help: "The device's id.") var device: String
    @Argument(help: "The room's id.") var room: String?
    @Flag(name: .long, help: "Take the device out of its room.") var clear = false
    @OptionGroup var global: GlobalOptions

    func validate() throws { try validatePlacement(device, room, clear: clear, what: "room") }

    func run() async throws {
        try await place(device, in: room, request: "setRoom", result: "roomId", none: "(no room)", global: global)
    }
}

struct Structure: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "structure",
        abstract: "Put a device in a structure (a home), or take it out with --clear.")

    @Argument(help: "The device's id.") var device: String
    @Argument(help: "The structure's id.") var structure: String?
    @Flag(name: .long, help: "Take the device out of its structure.") var clear = false
    @OptionGroup var global: GlobalOptions

    func validate() throws { try validatePlacement(device, structure, clear: clear, what: "structure") }

    func run() async throws {
        try await place(device, in: structure, request: "setStructure", result: "structureId", none: "(no structure)",
                        global: global)
    }
}

private func validatePlacement(_ device: String, _ place: String?, clear: Bool, what: String) throws {
    try validateLevel(device, "device id")
    guard (place == nil) != (!clear) else { throw ValidationError("give a \(what), or --clear (not both)") }
}

/// `room` and `structure`: sends the request and prints the id as the hub stored it.
private func place(
    _ device: String, in place: String?, request: String, result: String, none: String,
    global: GlobalOptions
) async throws {
    try await Session.perform(global, device: device, { _ in [(request, place.map(JSON.string) ?? .null)] }) {
        answer, _ in
        let stored = answer.json["result"]?[result]?.stringValue
        Terminal.out(stored.map { Render.sanitized($0) } ?? none)
    }
}

// MARK: - hubs

struct Hubs: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hubs",
        abstract: "List the hubs that published a status under the prefix.",
        discussion: "With --json: [{\"hub\":…,\"status\":…}].")

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        try await reporting {
            let session = try await Session.connect(global)
            let statuses = session.hubStatuses()
            if global.json {
                Terminal.out(
                    JSON.array(statuses.map { .object([("hub", .string($0.hub)), ("status", .string($0.status))]) })
                        .text)
            } else if statuses.isEmpty {
                Terminal.out("no hub under '\(global.prefix)/' on \(global.brokerDescription)")
            } else {
                Terminal.out(
                    Render.table(
                        [["HUB", "STATUS"]] + statuses.map { [Render.sanitized($0.hub), Render.sanitized($0.status)] }
                    )
                    .joined(separator: "\n"))
            }
        }
    }
}
