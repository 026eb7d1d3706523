import HearthContract
package import HearthJSON
import HearthEngine
import HearthMQTT
package import HearthModel

/// The same requests and documents as the MQTT contract, for a door inside the hub (the web page): a request runs on
/// the path an MQTT request takes — parsed by `HubRequest`, refused copies and `busy` alike, on the device's lane when
/// it has hardware, forwarded to the owner of a peer's device — but is answered to a callback, so the door works
/// while the broker is down.
extension MQTTHub {
    /// Runs one request (the payload of a `…/devices/<device>/set` message) and calls `reply` once with its response,
    /// on whichever thread ran it (the caller's for what needs no device, the device's lane, or the network thread for
    /// a peer's answer). Never blocks the caller.
    package func request(_ payload: [UInt8], device deviceID: String, reply: @escaping @Sendable (JSON) -> Void) {
        let (transaction, parsed) = HubRequest.parse(payload)
        switch parsed {
        case .failure(let error):
            reply(HubResponse.failure(transaction: transaction, device: deviceID, error))
        case .success(let request):
            perform(request, device: deviceID, reply: reply)
        }
    }

    /// Runs a request a door made itself (Matter's commands and writes) as `request` runs a parsed one.
    func perform(_ request: HubRequest, device deviceID: String, reply: @escaping @Sendable (JSON) -> Void) {
        let transaction = request.transaction
        if let router, let (owner, device, forwarded) = router.target(of: request, device: deviceID) {
            if let error = router.forward(forwarded, transaction: transaction, device: deviceID, to: owner,
                                           ownerDevice: device, reply: reply) {
                reply(HubResponse.failure(transaction: transaction, device: deviceID, error))
            }
            return
        }
        let runIt: @Sendable () -> Void = { [self] in
            reply(run(request.action, transaction: transaction, on: deviceID))
        }
        guard hasHardware(deviceID) else { return runIt() }
        switch home.enqueue(on: deviceID, limit: requestsWaitingPerDevice, runIt) {
        case .queued: return
        case .full:
            reply(HubResponse.failure(transaction: transaction, device: deviceID, HomeError(.busy,
                "device '\(deviceID)' has \(requestsWaitingPerDevice) requests waiting for its hardware; nothing was "
                + "done: send it again once it has answered them")))
        case .unknownDevice:
            runIt()  // notFound
        }
    }

    /// Runs one group request (the payload of a `<prefix>/groups/<group>/set` message) for the whole home, as that
    /// message runs it, and calls `reply` once with every hub's summary (`sendGroup`): this hub's members run here,
    /// the other hubs' when they receive it. A hub without peers, or one whose broker is down, runs its own members
    /// only. A group no hub is known to have members of is answered `notFound`. Never blocks the caller.
    package func groupRequest(_ payload: [UInt8], group: Int, reply: @escaping @Sendable (JSON) -> Void) {
        let members = home.groupMemberships().filter { $0.group == group }
        let (transaction, parsed) = HubRequest.parse(payload)
        let reachesPeers = router != nil && client.isConnected
        guard !members.isEmpty || (reachesPeers && !peersWithMembers(of: group).isEmpty) else {
            let error = HomeError(
                .notFound, "no device of hub '\(topics.hub)' or of a peer it knows is in group \(group)")
            return reply(
                .object([
                    ("transaction", transaction), ("group", .int(group)), ("hub", .string(topics.hub)),
                    ("ok", .bool(false)),
                    (
                        "error",
                        .object([
                            ("code", .string(error.code.rawValue)), ("status", .string(error.status.rawValue)),
                            ("message", .string(error.message))
                        ])
                    )
                ]))
        }
        switch parsed {
        case .failure(let error):
            // Nothing is sent: every hub would refuse it alike.
            let summary = HubResponse.groupSummary(transaction: transaction, group: group, hub: topics.hub, ran: [],
                                                   refused: members.map { ($0.deviceID, error) })
            reply(.object([("transaction", transaction), ("group", .int(group)), ("ok", .bool(false)),
                           ("hubs", .array(members.isEmpty ? [] : [summary]))]))
        case .success(let request):
            if reachesPeers, let body = try? JSON.parse(payload) {
                return sendGroup(request, payload: body, group: group, members: members, reply: reply)
            }
            guard !members.isEmpty else {
                return reply(.object([("transaction", transaction), ("group", .int(group)), ("ok", .bool(false)),
                                      ("hubs", .array([]))]))
            }
            runGroup(request.action, transaction: transaction, group: group, members: members) { summary, _ in
                reply(
                    .object([
                        ("transaction", transaction), ("group", .int(group)), ("ok", summary["ok"] ?? .bool(false)),
                        ("hubs", .array([summary]))
                    ]))
            }
        }
    }

    /// This hub's group memberships with their scenes, as `<prefix>/<hub>/groups` holds them.
    package func groupsView() -> [UInt8] {
        Self.groupsDocument(home.groupMemberships()).bytes
    }

    /// The whole home as `…/home` holds it: this hub's devices, then every peer's it has heard of.
    package func homeView() -> [UInt8] {
        if let router { return router.homeDocument().bytes }
        var out: [UInt8] = [UInt8(ascii: "[")]
        var first = true
        home.forEachView { d in
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            SummaryWriter.write(d, hub: topics.hub, to: &out)
        }
        out.append(UInt8(ascii: "]"))
        return out
    }

    /// The document of one device, as `…/devices/<device>` holds it; nil for an unknown device.
    package func document(of deviceID: String) -> [UInt8]? {
        guard let view = try? home.view(deviceID) else { return nil }
        var writer = DocumentWriter()
        return writer.document(view)
    }

    /// The peers this hub knows of and their status, in hub id order.
    package func peerStatuses() -> [(hub: String, status: ConnectivityState)] {
        router?.directory.peerStatuses() ?? []
    }
}

extension PeerRouter {
    /// Sends a request from a door inside the hub to the owner of the device, as `forward` does for an MQTT client, and
    /// calls `reply` with the owner's answer (or `unavailable`, or `deadlineExceeded` at the deadline); nil when it is
    /// on its way, the error when it cannot be sent.
    package func forward(_ request: JSON, transaction: JSON, device: String, to owner: String, ownerDevice: String,
                         reply: @escaping @Sendable (JSON) -> Void) -> HomeError? {
        forwarder.send(request, to: owner, device: ownerDevice) { outcome, _ in
            switch outcome {
            case .answered(let answer, _):
                reply(DirectReply.clientResponse(answer, transaction: transaction, device: device))
            case .failed(let error):
                reply(HubResponse.failure(transaction: transaction, device: device, error))
            }
        }
    }
}
