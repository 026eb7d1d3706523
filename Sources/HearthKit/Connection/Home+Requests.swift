// Requests: one JSON object on a device's `set` topic, answered on the hub's `responses` topic (and, with MQTT 5,
// on this client's own response topic), matched by transaction (docs/mqtt-api.md). A hub publishes a device's new
// document before it answers, so when an answer arrives the state here already shows what the request did.
internal import HearthContract
internal import HearthMQTT
internal import HearthSync

/// A hub's answer to one request.
public struct HubAnswer: Sendable, Hashable {
    /// The response as published.
    public let payload: [UInt8]
    public let json: JSON

    public var isOK: Bool { json["ok"] == .bool(true) }
    /// What the hub returned on success (`{"name":…}` for `setName`), if anything.
    public var result: JSON? { json["result"] }
    /// The hub's error, when it refused the request.
    public var error: HomeError? { isOK ? nil : HomeError(answer: json["error"]) }
}

extension Home {
    /// Sends one request (`members`: the request without its transaction) to `device` on `hub` and waits for the
    /// answer, until `deadline` (default: now + the home's timeout). The answer may be a refusal: see
    /// ``HubAnswer/error``. This is the untyped path the `hearth` CLI uses; typed traits use it too.
    ///
    /// - Throws: `deadlineExceeded` when the hub does not answer in time; `unavailable` (with a
    ///   ``ConnectionFailure``) when the request cannot be sent; `cancelled` when the task is cancelled or the home
    ///   closed.
    public func send(_ members: [(key: String, value: JSON)], device: String, hub: String,
                     deadline: ContinuousClock.Instant? = nil) async throws -> HubAnswer {
        try await request(members, device: device, hub: hub, deadline: deadline)
    }

    func request(_ members: [(key: String, value: JSON)], device: String, hub: String,
                 deadline: ContinuousClock.Instant?) async throws(HomeError) -> HubAnswer {
        let start = ContinuousClock.now
        let deadline = deadline ?? start + options.timeout
        let transaction = "hk-\(randomHex(8))"
        let payload = JSON.object([("transaction", .string(transaction))] + members).bytes
        let topic = scheme.topic(.set(hub: hub, device: device))
        let client = self.client
        let v5 = client.connectedProtocolVersion == .v5
        let responseTopic = self.responseTopic
        let result = await wait(for: "request:\(transaction)", until: deadline) { () throws(MQTTError) in
            try client.publish(topic, payload: payload, qos: .atLeastOnce, responseTopic: v5 ? responseTopic : nil,
                               correlationData: v5 ? Array(transaction.utf8) : nil)
        }
        switch result {
        case .answer(let message):
            guard let json = message.json else {
                throw HomeError(
                    code: .dataLoss, status: .failure, message: "hub '\(hub)' answered with something that is not JSON")
            }
            return HubAnswer(payload: message.payload, json: json)
        case .timedOut:
            throw HomeError.deadlineExceeded(
                "no answer from hub '\(hub)' within \(secondsText(deadline - start)); is it online?")
        case .cancelled:
            throw HomeError.cancelled("the request to '\(device)' was cancelled")
        case .closed:
            throw HomeError.cancelled("the home was closed")
        case .sendFailed(let error):
            throw HomeError(
                code: .unavailable, status: .failure, message: "cannot send the request: \(error)",
                connectionFailure: ConnectionFailure(kind: .sendFailed, detail: "\(error)", context: error.context))
        }
    }

    /// What a typed call checks before anything is sent, so that it fails at once rather than after a timeout.
    enum Precondition {
        /// A command or write to one trait: it must be online and its source known.
        case trait(type: String, trait: String)
        /// A change to the device itself (its name): its hub must be reachable.
        case device
    }

    /// A request on behalf of a typed call: checked first (fails fast with `unavailable` for an offline device or
    /// hub, or while the broker is out of reach), sent to the chosen hub (``Options/hub``) or else the owner, and
    /// the hub's refusal thrown.
    func perform(_ members: [(key: String, value: JSON)], device: String, owner: String,
                 _ precondition: Precondition) async throws(HomeError) -> HubAnswer {
        let (closed, linkUp, current, statuses) = state.withLock { s in
            (s.closed, s.linkUp, s.devices.first { $0.id == device && $0.hub == owner },
             s.hubs.mapValues(\.status))
        }
        if closed { throw HomeError.cancelled("the home was closed") }
        guard linkUp else {
            throw HomeError.unavailable(
                "not connected to the MQTT broker at \(broker) (the client reconnects by itself); "
                    + "nothing was sent to '\(device)'")
        }
        guard let current else { throw HomeError.notFound("no device '\(device)' on hub '\(owner)' in the home") }
        let target = options.hub ?? owner
        for hub in Set([owner, target]) where statuses[hub] ?? nil == "offline" {
            throw HomeError.unavailable("hub '\(hub)' is offline, so '\(device)' cannot be reached; nothing was sent")
        }
        if case .trait(let typeName, let traitName) = precondition,
           let trait = current.types[named: typeName]?.traits[named: traitName] {
            let c = trait.metadata.sourceConnectivity
            guard c.acceptsCommands else {
                throw HomeError.unavailable("\(device) \(typeName).\(traitName) is \(c.connectivityState.rawValue) "
                    + "(\(c.dataSourceLocality.rawValue)); nothing was sent")
            }
        }
        let answer = try await request(members, device: device, hub: target, deadline: nil)
        if let error = answer.error { throw error }
        return answer
    }
}
