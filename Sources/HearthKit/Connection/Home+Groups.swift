// Home-wide groups (docs/clusters/groups.md): every hub publishes its members of each group on `<prefix>/<hub>/groups`;
// a command published once on `<prefix>/groups/<id>/set` runs on every member of every hub, and each hub with members
// answers with one summary. This is the untyped path `hearth group` uses.
internal import HearthContract
internal import HearthMQTT
internal import HearthSync

/// One device type's membership of a group, as its hub published it.
public struct GroupMember: Sendable, Hashable {
    public struct Scene: Sendable, Hashable {
        public var id: Int
        public var name: String
        /// Milliseconds.
        public var transitionTime: Int
    }

    public var group: Int
    public var hub: String
    public var device: String
    public var type: String
    /// The name this member has for the group ("" if none).
    public var name: String
    public var scenes: [Scene]
}

/// One hub's answer to a group command: which of its members ran it and which refused, with why.
public struct GroupSummary: Sendable, Hashable {
    public let hub: String
    public let json: JSON
    public var isOK: Bool { json["ok"] == .bool(true) }
    public var ran: [String] { json["ran"]?.arrayValue.compactMap(\.stringValue) ?? [] }
    public var refused: [(device: String, error: HomeError)] {
        (json["refused"]?.arrayValue ?? []).map { ($0["device"]?.stringValue ?? "?", HomeError(answer: $0["error"])) }
    }

    public static func == (a: GroupSummary, b: GroupSummary) -> Bool { a.hub == b.hub && a.json == b.json }
    public func hash(into hasher: inout Hasher) { hasher.combine(hub) }
}

extension Home {
    /// Every group membership the hubs published, by group, hub, device and type.
    public func groupMembers() -> [GroupMember] {
        let published = state.withLock { s in s.hubs.compactMap { hub, record in record.groups.map { (hub, $0) } } }
        var members: [GroupMember] = []
        for (hub, message) in published {
            for entry in message.json?.arrayValue ?? [] {
                guard let group = entry["group"]?.intValue, let device = entry["device"]?.stringValue,
                      let type = entry["type"]?.stringValue else { continue }
                let scenes = (entry["scenes"]?.arrayValue ?? []).compactMap { s -> GroupMember.Scene? in
                    guard let id = s["scene"]?.intValue else { return nil }
                    return GroupMember.Scene(id: id, name: s["name"]?.stringValue ?? "",
                                             transitionTime: s["transitionTime"]?.intValue ?? 0)
                }
                members.append(GroupMember(group: group, hub: hub, device: device, type: type,
                                           name: entry["name"]?.stringValue ?? "", scenes: scenes))
            }
        }
        return members.sorted { ($0.group, $0.hub, $0.device, $0.type) < ($1.group, $1.hub, $1.device, $1.type) }
    }

    /// Publishes one command (`members`: the request without its transaction, as for a device) to every member of
    /// `group`, and waits until every online hub with members has sent its summary, or until `deadline`; returns the
    /// summaries that arrived, in hub order (a hub missing from them did not answer in time).
    public func sendToGroup(_ group: Int, _ members: [(key: String, value: JSON)],
                            deadline: ContinuousClock.Instant? = nil) async throws -> [GroupSummary] {
        let deadline = deadline ?? ContinuousClock.now + options.timeout
        let transaction = "hk-\(randomHex(8))"
        let payload = JSON.object([("transaction", .string(transaction))] + members).bytes
        let topic = scheme.groupSet(group)
        let client = self.client
        let expected = Set(groupMembers().filter { $0.group == group }.map(\.hub)).filter { hub in
            state.withLock { $0.hubs[hub]?.status == "online" }
        }
        if expected.isEmpty {
            // No hub has a member online: nobody will answer, so do not wait for anyone.
            do throws(MQTTError) { try client.publish(topic, payload: payload, qos: .atLeastOnce) } catch {
                throw HomeError(
                    code: .unavailable, status: .failure, message: "cannot send the group command: \(error)",
                    connectionFailure: ConnectionFailure(kind: .sendFailed, detail: "\(error)", context: error.context))
            }
            return []
        }
        state.withLock { $0.groupAnswers[transaction] = (expected, [:]) }
        defer { _ = state.withLock { $0.groupAnswers.removeValue(forKey: transaction) } }
        let v5 = client.connectedProtocolVersion == .v5
        let responseTopic = self.responseTopic
        let result = await wait(for: "group:\(transaction)", until: deadline) { () throws(MQTTError) in
            try client.publish(topic, payload: payload, qos: .atLeastOnce, responseTopic: v5 ? responseTopic : nil,
                               correlationData: v5 ? Array(transaction.utf8) : nil)
        }
        switch result {
        case .answer, .timedOut:
            break
        case .cancelled, .closed:
            throw HomeError.cancelled("the group command was cancelled")
        case .sendFailed(let error):
            throw HomeError(
                code: .unavailable, status: .failure, message: "cannot send the group command: \(error)",
                connectionFailure: ConnectionFailure(kind: .sendFailed, detail: "\(error)", context: error.context))
        }
        let summaries = state.withLock { $0.groupAnswers[transaction]?.summaries ?? [:] }
        return summaries.sorted { $0.key < $1.key }.compactMap { hub, message in
            message.json.map { GroupSummary(hub: hub, json: $0) }
        }
    }
}
