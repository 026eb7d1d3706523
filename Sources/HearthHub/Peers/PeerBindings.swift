import HearthContract
public import HearthJSON
public import HearthEngine
import HearthModel

/// A local switch bound to a command on any hub.
public struct PeerBinding: Sendable, Hashable {
    public var from: String
    /// Switch events that fire it (default: `initialPress` and `switchLatched`).
    public var events: Set<String>
    public var hub: String
    public var device: String
    public var type: String?
    public var trait: String
    public var command: String
    /// The command's `args`, exactly as a client would send them (`docs/mqtt-api.md`); the configuration
    /// check has made sure the local trait registry accepts them.
    public var arguments: JSON

    public init(from: String, events: Set<String> = ["initialPress", "switchLatched"], hub: String, device: String,
                type: String? = nil, trait: String, command: String, arguments: JSON = .object([])) {
        self.from = from
        self.events = events
        self.hub = hub
        self.device = device
        self.type = type
        self.trait = trait
        self.command = command
        self.arguments = arguments
    }

    var label: String { "\(from) → \(hub)/\(device) \(trait).\(command)" }

    /// The arguments as engine values for `command`, each converted for its field. Throws rather than
    /// leave one out: a dropped argument would run another command than the one configured.
    func values(for command: CommandDescriptor?) throws(HomeError) -> [String: Value] {
        var values: [String: Value] = [:]
        switch arguments {
        case .object(let members):
            for (key, json) in members {
                values[key] = try ValueCoding.value(json, as: command?.fields.first { $0.name == key }?.type,
                                                    what: "\(self.command).\(key)")
            }
        case .null: break
        default: throw .invalidDataType("the arguments of \(self.command) must be an object, not \(arguments.kind)")
        }
        return values
    }
}

/// Runs the bindings whose switch is on this hub: a switch event becomes a command on the hub that owns
/// the target, this one included.
///
/// A command for another hub goes through the forwarder: a failure is logged, and a command nobody
/// answered in time is sent once more. It runs where the switch event is delivered (an engine observer,
/// on the thread that raised the event); it only publishes, so it never waits on the network.
public final class PeerBindings: Sendable {
    public let home: Home
    public let hub: String
    let bindings: [PeerBinding]
    let forwarder: PeerForwarder
    let log: @Sendable (String) -> Void

    public init(home: Home, hub: String, bindings: [PeerBinding], forwarder: PeerForwarder,
                log: @escaping @Sendable (String) -> Void = { _ in }) {
        self.home = home
        self.hub = hub
        self.bindings = bindings
        self.forwarder = forwarder
        self.log = log
    }

    /// Starts firing on the home's switch events.
    func start() {
        guard !bindings.isEmpty else { return }
        _ = home.observe { [weak self] events in self?.fireBindings(events) }
    }

    func fireBindings(_ events: [HomeEvent]) {
        for e in events {
            guard case .event(_, let trait, let name, _) = e.change, trait == .switchTrait else { continue }
            for b in bindings where b.from == e.deviceID && b.events.contains(name) { fire(b, attempt: 0) }
        }
    }

    /// Runs `binding`'s command; `attempt` 1 is the retry after a silent owner, sent with the first attempt's
    /// transaction: an owner that ran the first and whose answer was lost answers the copy without running it again.
    func fire(_ binding: PeerBinding, attempt: Int, transaction: String? = nil) {
        if binding.hub == hub {
            // On the target's lane, as any request: its hardware may be slow, and the switch must not wait.
            let queued = home.enqueue(on: binding.device) { [home, log] in
                do throws(HomeError) {
                    let command = home.registry.server(for: TraitID(qualifiedName: binding.trait))?.descriptor
                        .command(named: binding.command)
                    try home.invoke(binding.device, type: binding.type, trait: binding.trait, command: binding.command,
                                    arguments: try binding.values(for: command))
                } catch {
                    log("binding \(binding.label) failed: \(error)")
                }
            }
            if !queued { log("binding \(binding.label) failed: no device '\(binding.device)' on this hub") }
            return
        }
        var request: [(key: String, value: JSON)] = []
        if let type = binding.type { request.append(("type", .string(type))) }
        request += [
            ("trait", .string(binding.trait)), ("command", .string(binding.command)), ("args", binding.arguments)
        ]
        let error = forwarder.send(.object(request), to: binding.hub, device: binding.device,
                                   transaction: transaction) { [weak self] outcome, sentAs in
            self?.finished(binding, attempt: attempt, transaction: sentAs, outcome)
        }
        if let error { log("binding \(binding.label) failed: \(error)") }
    }

    private func finished(_ binding: PeerBinding, attempt: Int, transaction: String, _ outcome: PeerForwarder.Outcome) {
        switch outcome {
        case .answered(let response, _):
            if response["ok"] != .bool(true) {
                log("binding \(binding.label) failed: \(response["error"]?["message"]?.text ?? response.text)")
            }
        case .failed(let error) where error.status == .timeout && attempt == 0:
            log(
                "binding \(binding.label): no answer from hub '\(binding.hub)' in "
                    + "\(forwarder.timeout(for: binding.hub)); "
                    + "sending it again once (run at most once)")
            fire(binding, attempt: 1, transaction: transaction)
        case .failed(let error):
            log("binding \(binding.label) failed: \(error)")
        }
    }
}
