// The Matter bridge's door onto the home: a Matter command or write becomes the request an MQTT client would send for
// it, run by `MQTTHub.perform` — on the device's lane when it has hardware, refused `busy` when too many wait,
// forwarded to the owning hub for a peer's device — so that Matter and MQTT never disagree on what a request does.
// Values cross as the MQTT contract codes them (ValueCoding), the one coding the request path reads.

import HearthContract
import HearthEngine
import HearthJSON
import HearthMatterBridge
import HearthModel

struct MQTTBridgeDoor: BridgeDoor {
    let hub: MQTTHub

    func invoke(device: String, type: String, trait: TraitID, command: String, arguments: [String: Value],
                reply: @escaping @Sendable (Result<[String: Value]?, HomeError>) -> Void) {
        let descriptor = hub.home.registry.server(for: trait)?.descriptor.command(named: command)
        let fields = descriptor?.fields ?? []
        let json = JSON.object(arguments.sorted { $0.key < $1.key }.map { name, value in
            (key: name, value: fields.first { $0.name == name }.map { ValueCoding.json(value, as: $0.type) }
                ?? Self.untyped(value))
        })
        let request = Self.request(.command(type: type, trait: trait.qualifiedName, name: command, arguments: json))
        hub.perform(request, device: device) { response in
            switch Self.outcome(response) {
            case .failure(let error): reply(.failure(error))
            case .success(nil): reply(.success(nil))
            case .success(let result?):
                var values: [String: Value] = [:]
                if case .object(let members) = result {
                    for (name, json) in members {
                        let type = descriptor?.response.first { $0.name == name }?.type
                        values[name] = try? ValueCoding.value(json, as: type, what: name)
                    }
                }
                reply(.success(values))
            }
        }
    }

    func update(device: String, type: String, trait: TraitID, attributes: [String: Value],
                reply: @escaping @Sendable (HomeError?) -> Void) {
        let descriptor = hub.home.registry.server(for: trait)?.descriptor
        let json = JSON.object(attributes.sorted { $0.key < $1.key }.map { name, value in
            (key: name, value: descriptor?.attribute(named: name).map { ValueCoding.json(value, as: $0.type) }
                ?? Self.untyped(value))
        })
        let request = Self.request(.update(type: type, trait: trait.qualifiedName, attributes: json))
        hub.perform(request, device: device) { response in
            if case .failure(let error) = Self.outcome(response) { reply(error) } else { reply(nil) }
        }
    }

    func rename(device: String, to name: String, reply: @escaping @Sendable (HomeError?) -> Void) {
        hub.perform(Self.request(.setName(name)), device: device) { response in
            if case .failure(let error) = Self.outcome(response) { reply(error) } else { reply(nil) }
        }
    }

    /// The request for `action`, with the JSON an MQTT client would have sent for it: what is forwarded when the
    /// device is a peer's (`matter.bridge: home`).
    static func request(_ action: HubRequest.Action) -> HubRequest {
        var request = HubRequest(transaction: .null, action: action)
        var members: [(key: String, value: JSON)] = []
        switch action {
        case .command(let type, let trait, let name, let arguments):
            if let type { members.append(("type", .string(type))) }
            members += [("trait", .string(trait)), ("command", .string(name)), ("args", arguments)]
        case .update(let type, let trait, let attributes):
            if let type { members.append(("type", .string(type))) }
            members += [("trait", .string(trait)), ("update", attributes)]
        case .setName(let name): members = [("setName", .string(name))]
        case .setRoom(let room): members = [("setRoom", room.map(JSON.string) ?? .null)]
        case .setStructure(let structure): members = [("setStructure", structure.map(JSON.string) ?? .null)]
        case .get: members = [("get", .bool(true))]
        }
        request.json = .object(members)
        return request
    }

    /// A response's `result` (nil when it has none) or its error.
    static func outcome(_ response: JSON) -> Result<JSON?, HomeError> {
        guard case .object(let members) = response else {
            return .failure(HomeError(.failure, "the hub answered with no response object"))
        }
        func member(_ key: String) -> JSON? { members.first { $0.key == key }?.value }
        if member("ok") == .bool(true) { return .success(member("result")) }
        guard case .object(let error)? = member("error") else {
            return .failure(HomeError(.failure, "the hub's answer has no error"))
        }
        func text(_ key: String) -> String? {
            if case .string(let s)? = error.first(where: { $0.key == key })?.value { s } else { nil }
        }
        let status = text("status").flatMap(HomeError.Status.init(rawValue:)) ?? .failure
        let code = text("code").flatMap(HomeError.Code.init(rawValue:)) ?? status.canonicalCode
        return .failure(HomeError(code: code, status: status, message: text("message") ?? ""))
    }

    /// A value with no descriptor to code it by (a field the command does not have: the engine refuses it by name).
    static func untyped(_ value: Value) -> JSON {
        switch value {
        case .null: .null
        case .bool(let b): .bool(b)
        case .int(let i): .int(i)
        case .string(let s): .string(s)
        case .structure(let fields):
            .object(fields.sorted { $0.key < $1.key }.map { (key: $0.key, value: untyped($0.value)) })
        case .list(let items): .array(items.map(untyped))
        }
    }
}
