public import HearthJSON
public import HearthModel

/// One request on a device's `set` topic, as `docs/mqtt-api.md` defines it.
public struct HubRequest: Sendable, Hashable {
    public enum Action: Sendable, Hashable {
        case command(type: String?, trait: String, name: String, arguments: JSON)
        case update(type: String?, trait: String, attributes: JSON)
        case setName(String)
        case setRoom(String?)
        case setStructure(String?)
        /// Re-read the hardware now and republish the device.
        case get
    }

    /// Echoed in the response: a string or a number from the client, or null.
    public var transaction: JSON
    public var action: Action
    /// The hub that forwarded this request on a client's behalf; such a request is never forwarded again,
    /// so routes between hubs cannot loop.
    public var forwardedBy: String?
    /// The request as it arrived, to forward it unchanged.
    public var json: JSON = .object([])

    public init(transaction: JSON, action: Action, forwardedBy: String? = nil) {
        self.transaction = transaction
        self.action = action
        self.forwardedBy = forwardedBy
    }

    public static func == (a: HubRequest, b: HubRequest) -> Bool {
        a.transaction == b.transaction && a.action == b.action && a.forwardedBy == b.forwardedBy
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(transaction)
        hasher.combine(action)
    }

    /// The largest request a hub reads.
    public static let maximumSize = 64 * 1024

    static let actionKeys = ["command", "update", "setName", "setRoom", "setStructure", "get"]
    static let allKeys = ["transaction", "type", "trait", "args"] + actionKeys + ["forwardedBy"]

    /// Parses a payload. The transaction is returned even when the rest is wrong, so that the error
    /// response can carry it.
    public static func parse(_ payload: [UInt8]) -> (transaction: JSON, result: Result<HubRequest, HomeError>) {
        guard payload.count <= maximumSize else {
            return (.null, .failure(HomeError(.resourceExhausted,
                "the request is \(payload.count) bytes; at most \(maximumSize) are allowed")))
        }
        let json: JSON
        do throws(JSONParseError) {
            json = try JSON.parse(payload)
        } catch {
            return (.null, .failure(.invalidCommand("the request is not valid JSON: \(error)")))
        }
        guard case .object(let members) = json else {
            return (.null, .failure(.invalidCommand("the request must be a JSON object, not \(json.kind)")))
        }
        var transaction = JSON.null
        switch json["transaction"] {
        case nil, .null?: break
        case let t? where { if case .string = t { true } else if case .int = t { true } else { false } }():
            transaction = t
        case let t?:
            return (.null, .failure(.invalidCommand("transaction must be a string or a number, not \(t.kind)")))
        }
        do throws(HomeError) {
            var request = HubRequest(transaction: transaction, action: try action(members, json))
            switch json["forwardedBy"] {
            case nil: break
            case .string(let hub)?: request.forwardedBy = hub
            case let other?: throw .invalidCommand("forwardedBy must be a hub id, not \(other.kind)")
            }
            request.json = json
            return (transaction, .success(request))
        } catch {
            return (transaction, .failure(error))
        }
    }

    private static func action(_ members: [(key: String, value: JSON)], _ json: JSON) throws(HomeError) -> Action {
        for (key, _) in members where !allKeys.contains(key) {
            // forwardedBy is for hubs, not people: it is accepted but not advertised.
            throw .invalidCommand(
                "unknown key '\(key)'; a request may have \(allKeys.dropLast().joined(separator: ", "))")
        }
        // Counted without a list of them: the list is made only for the message (this runs for every request).
        var first: String?, count = 0
        for (key, _) in members where actionKeys.contains(key) {
            if first == nil { first = key }
            count += 1
        }
        guard count == 1, let verb = first else {
            let actions = members.map(\.key).filter(actionKeys.contains)
            throw .invalidCommand(actions.isEmpty
                ? "the request says nothing to do; give one of \(actionKeys.joined(separator: ", "))"
                : "the request gives \(actions.joined(separator: " and ")); give only one")
        }
        func string(_ key: String) throws(HomeError) -> String? {
            switch json[key] {
            case nil: return nil
            case .string(let s)?: return s
            case let other?: throw .invalidCommand("\(key) must be a string, not \(other.kind)")
            }
        }
        func only(_ allowed: [String]) throws(HomeError) {
            for (key, _) in members
            where key != "transaction" && key != "forwardedBy" && key != verb && !allowed.contains(key) {
                throw .invalidCommand("'\(key)' does not go with \(verb)")
            }
        }
        func trait() throws(HomeError) -> String {
            guard let t = try string("trait") else { throw .invalidCommand("\(verb) needs \"trait\" (e.g. \"onOff\")") }
            return t
        }
        switch verb {
        case "command":
            try only(["type", "trait", "args"])
            guard let name = try string("command") else { throw .invalidCommand("command must be a string") }
            let args = json["args"] ?? .object([])
            guard case .object = args else { throw .invalidCommand("args must be an object, not \(args.kind)") }
            return .command(type: try string("type"), trait: try trait(), name: name, arguments: args)
        case "update":
            try only(["type", "trait"])
            guard let attributes = json["update"], case .object(let m) = attributes else {
                throw .invalidCommand("update must be an object of attribute names and values")
            }
            guard !m.isEmpty else { throw .invalidCommand("update names no attribute to write") }
            return .update(type: try string("type"), trait: try trait(), attributes: attributes)
        case "setName":
            try only([])
            guard let name = try string("setName") else { throw .invalidCommand("setName must be a string") }
            return .setName(name)
        case "setRoom", "setStructure":
            try only([])
            let value: String?
            switch json[verb] {
            case .string(let s)?: value = s
            case .null?: value = nil
            case let other?: throw .invalidCommand("\(verb) must be a string or null, not \(other.kind)")
            case nil: value = nil
            }
            return verb == "setRoom" ? .setRoom(value) : .setStructure(value)
        default:  // get
            try only([])
            guard json["get"] == .bool(true) else { throw .invalidCommand("get must be true") }
            return .get
        }
    }
}

/// The answer to one request.
public enum HubResponse {
    /// One hub's answer to a group command (`docs/mqtt-api.md`): which members ran it, which refused and why.
    public static func groupSummary(transaction: JSON, group: Int, hub: String, ran: [String],
                                    refused: [(device: String, error: HomeError)]) -> JSON {
        .object([
            ("transaction", transaction), ("group", .int(group)), ("hub", .string(hub)), ("ok", .bool(refused.isEmpty)),
            ("ran", .array(ran.map(JSON.string))),
            ("refused", .array(refused.map { r in
                .object([("device", .string(r.device)), ("error", .object([
                    ("code", .string(r.error.code.rawValue)), ("status", .string(r.error.status.rawValue)),
                    ("message", .string(r.error.message)),
                ]))])
            })),
        ])
    }

    public static func ok(transaction: JSON, device: String, result: JSON? = nil) -> JSON {
        var members: [(key: String, value: JSON)] = [
            ("transaction", transaction), ("device", .string(device)), ("ok", .bool(true))
        ]
        if let result { members.append(("result", result)) }
        return .object(members)
    }

    public static func failure(transaction: JSON, device: String?, _ error: HomeError) -> JSON {
        .object([
            ("transaction", transaction), ("device", device.map(JSON.string) ?? .null), ("ok", .bool(false)),
            ("error", .object([("code", .string(error.code.rawValue)), ("status", .string(error.status.rawValue)),
                               ("message", .string(error.message))])),
        ])
    }
}
