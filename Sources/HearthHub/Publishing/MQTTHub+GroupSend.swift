import HearthContract
import HearthJSON
import HearthEngine
import HearthModel
import HearthMQTT
import HearthSync

/// A group request from a door inside the hub (the web page) for the whole home: sent once on
/// `<prefix>/groups/<group>/set`, as an MQTT client sends it, with this hub's `answers` as its response topic; this hub
/// runs its own members itself (its own copy of the message is recognised by its transaction and not run again), and
/// the door gets every hub's summary, or "not answered" for a hub expected that said nothing within the wait.
extension MQTTHub {
    /// How long a group request from a door waits for the other hubs' summaries, in milliseconds on the home's clock.
    public static let defaultGroupAnswerWait: Int64 = 5000

    /// Sends `payload` (a group request) to every hub with members of `group` and calls `reply` once with
    /// `{"transaction","group","ok","hubs":[summary…]}`: this hub's summary, then each peer's in hub order, a peer
    /// that did not answer within `groupAnswerWait` as `{"hub":…,"answered":false}`. While the broker is down, or for
    /// a hub without peers, only this hub's members run.
    func sendGroup(_ request: HubRequest, payload: JSON, group: Int, members: [GroupMembership],
                   reply: @escaping @Sendable (JSON) -> Void) {
        let id = "\(topics.hub)-group-\(String(UInt64.random(in: 0...UInt64.max), radix: 16))"
        let sent = JSON.string(id)
        let expected = Set(peerGroups.withLock { $0.filter { $0.value.contains(group) }.map(\.key) })
            .union(members.isEmpty ? [] : [topics.hub])
        let pending = PendingGroupSend(transaction: request.transaction, group: group, hub: topics.hub,
                                       expected: expected, reply: reply)
        groupSends.withLock { $0[id] = pending }
        let now = home.clock.now
        ownGroupSends.withLock { recent in
            recent = recent.filter { now - $0.value < Self.ownGroupSendMemory }
            recent[id] = now
        }
        var out: [(key: String, value: JSON)] = [("transaction", sent)]
        if case .object(let fields) = payload { out += fields.filter { $0.key != "transaction" } }
        var published = false
        if client.isConnected {
            do throws(MQTTError) {
                try client.publish(topics.groupSet(group), payload: JSON.object(out).bytes, qos: .atLeastOnce,
                                   responseTopic: topics.answers)
                published = true
            } catch { log("cannot send the request for group \(group) to the other hubs: \(error)") }
        }
        if !published { pending.narrow(to: members.isEmpty ? [] : [topics.hub]) }
        if !members.isEmpty {
            runGroup(request.action, transaction: sent, group: group, members: members) { [self] summary, _ in
                groupAnswered(id, hub: topics.hub, summary)
            }
        }
        if pending.isComplete { return finishGroupSend(id) }
        let deadline = home.clock.now + groupAnswerWait
        let clock = home.clock
        let timer = Task { [weak self] in
            do { try await clock.sleep(until: deadline) } catch { return }
            self?.finishGroupSend(id)
        }
        pending.keep(timer)
    }

    /// How long this hub remembers the group requests it sent, to know its own copy (the broker's delivery of it
    /// back): a minute, as `RecentRequests` remembers a request.
    static var ownGroupSendMemory: Int64 { 60_000 }

    /// Whether `message` on a group topic is one this hub sent for a door (and has run on its members itself).
    func isOwnGroupSend(_ message: MQTTMessage) -> Bool {
        guard ownGroupSends.withLock({ !$0.isEmpty }),
              case .string(let t) = HubRequest.parse(message.payload).transaction else { return false }
        return ownGroupSends.withLock { $0[t] != nil }
    }

    /// Takes a hub's summary of a group request this hub sent, from its `answers` (MQTT 5) or a hub's `responses`
    /// (MQTT 3.1.1); returns false when it is not one.
    func takeGroupAnswer(_ message: MQTTMessage, from topic: HubTopic?) -> Bool {
        guard groupSends.withLock({ !$0.isEmpty }) else { return false }
        switch topic {
        case .answers(let hub)? where topics.isThisHub(hub): break
        case .responses(let hub)? where !topics.isThisHub(hub): break
        default: return false
        }
        guard let summary = try? JSON.parse(message.payload), case .string(let t)? = summary["transaction"],
              case .string(let hub)? = summary["hub"], summary["group"] != nil else { return false }
        guard groupSends.withLock({ $0[t] != nil }) else { return false }
        groupAnswered(t, hub: hub, summary)
        return true
    }

    private func groupAnswered(_ id: String, hub: String, _ summary: JSON) {
        guard let pending = groupSends.withLock({ $0[id] }) else { return }
        pending.answered(hub, summary)
        if pending.isComplete { finishGroupSend(id) }
    }

    /// Replies to the door once: every summary in, or the wait over.
    func finishGroupSend(_ id: String) {
        guard let pending = groupSends.withLock({ $0.removeValue(forKey: id) }) else { return }
        pending.finish()
    }

    /// Keeps a peer's group memberships from its retained `<prefix>/<hub>/groups`; a document that cannot be read
    /// leaves the last one.
    func peerGroupsChanged(hub: String, _ payload: [UInt8]) {
        guard !payload.isEmpty else { return peerGroups.withLock { _ = $0.removeValue(forKey: hub) } }
        guard case .array(let entries)? = try? JSON.parse(payload) else {
            return log("ignored hub '\(hub)'s group memberships: not a JSON array")
        }
        let groups = Set(
            entries.compactMap { entry -> Int? in if case .int(let g)? = entry["group"] { g } else { nil } })
        peerGroups.withLock { $0[hub] = groups }
    }

    /// The peers known to have members of `group`, from their retained group memberships.
    package func peersWithMembers(of group: Int) -> [String] {
        peerGroups.withLock { $0.filter { $0.value.contains(group) }.map(\.key).sorted() }
    }
}

/// One group request a door sent, until every expected hub has answered or the wait is over.
final class PendingGroupSend: Sendable {
    private struct State {
        var expected: Set<String>
        var summaries: [String: JSON] = [:]
        var timer: Task<Void, Never>?
        var replied = false
    }
    private let transaction: JSON
    private let group: Int
    private let hub: String
    private let reply: @Sendable (JSON) -> Void
    private let state: Locked<State>

    init(transaction: JSON, group: Int, hub: String, expected: Set<String>, reply: @escaping @Sendable (JSON) -> Void) {
        self.transaction = transaction
        self.group = group
        self.hub = hub
        self.reply = reply
        state = Locked(State(expected: expected))
    }

    var isComplete: Bool { state.withLock { s in s.expected.allSatisfy { s.summaries[$0] != nil } } }

    /// Nothing left the hub: only its own members will answer.
    func narrow(to hubs: Set<String>) { state.withLock { $0.expected = hubs } }

    func keep(_ timer: Task<Void, Never>) {
        let cancelled = state.withLock { s -> Bool in
            if s.replied { return true }
            s.timer = timer
            return false
        }
        if cancelled { timer.cancel() }
    }

    /// A hub's summary; a hub not expected (its memberships not yet known here) is shown too.
    func answered(_ hub: String, _ summary: JSON) {
        state.withLock { s in
            if s.summaries[hub] == nil { s.summaries[hub] = summary }
        }
    }

    func finish() {
        let done = state.withLock {
            s -> (summaries: [String: JSON], expected: Set<String>, timer: Task<Void, Never>?)? in
            guard !s.replied else { return nil }
            s.replied = true
            return (s.summaries, s.expected, s.timer)
        }
        guard let done else { return }
        done.timer?.cancel()
        // This hub first, then the others in hub order.
        let hubs = done.expected.union(done.summaries.keys).sorted { ($0 == hub ? 0 : 1, $0) < ($1 == hub ? 0 : 1, $1) }
        let answers: [JSON] = hubs.map { h in
            guard let summary = done.summaries[h] else {
                return .object([("hub", .string(h)), ("answered", .bool(false))])
            }
            // Each summary with the door's transaction, as if it had been sent alone.
            guard case .object(let fields) = summary else { return summary }
            return .object(fields.map { (key: $0.key, value: $0.key == "transaction" ? transaction : $0.value) })
        }
        let ok = hubs.allSatisfy { done.summaries[$0]?["ok"] == .bool(true) }
        reply(
            .object([
                ("transaction", transaction), ("group", .int(group)), ("ok", .bool(ok)), ("hubs", .array(answers))
            ]))
    }
}
