import HearthContract
import HearthEngine
import HearthJSON
import HearthModel
import HearthMQTT
import HearthSync

/// Home-wide groups (`docs/clusters/groups.md`): a command published once on `<prefix>/groups/<id>/set` runs on every
/// member of every hub, like Matter's groupcast; each hub answers with one summary on its responses topic.
extension MQTTHub {
    /// Subscribes to the topics of the groups this hub's devices are in now, and unsubscribes from the others.
    /// Called at start and whenever a group table changes (addGroup, removeGroup, removeAllGroups).
    func syncGroupSubscriptions() {
        let wanted = Set(home.groupMemberships().map(\.group))
        let (add, remove) = groupSubscriptions.withLock { current -> (Set<Int>, Set<Int>) in
            defer { current = wanted }
            return (wanted.subtracting(current), current.subtracting(wanted))
        }
        // The client keeps its subscriptions across reconnections; a failure here is the broker's to repeat.
        for group in add.sorted() {
            do throws(MQTTError) {
                try client.subscribe(topics.groupSet(group),
                                     options: MQTTSubscriptionOptions(qos: .atLeastOnce, retainAsPublished: true))
            } catch { log("cannot subscribe to group \(group): \(error)") }
        }
        for group in remove.sorted() {
            do throws(MQTTError) { try client.unsubscribe(topics.groupSet(group)) } catch {
                log("cannot unsubscribe from group \(group): \(error)")
            }
        }
    }

    /// `<prefix>/<hub>/groups`, retained: every membership of this hub's devices, with its scenes.
    func publishGroups() {
        send(topics.groups, Self.groupsDocument(home.groupMemberships()).bytes, qos: .atLeastOnce, retain: true)
    }

    static func groupsDocument(_ memberships: [GroupMembership]) -> JSON {
        .array(
            memberships.map { m in
                .object([
                    ("group", .int(m.group)), ("device", .string(m.deviceID)), ("type", .string(m.type)),
                    ("name", .string(m.name)),
                    (
                        "scenes",
                        .array(
                            m.scenes.map { s in
                                .object([
                                    ("scene", .int(s.id)), ("name", .string(s.name)),
                                    ("transitionTime", .int(s.transitionTime))
                                ])
                            })
                    )
                ])
            })
    }

    /// Runs a group command on every member of this hub, each on its own lane when it has hardware, and publishes one
    /// summary when the last has answered. Non-members never see it: the hub is subscribed only to its groups' topics,
    /// and a message for a group it has left meanwhile finds no member and is dropped.
    func handleGroup(_ message: MQTTMessage, group: Int) {
        let members = home.groupMemberships().filter { $0.group == group }
        guard !members.isEmpty else { return }
        // This hub sent it for a door and has run its members itself.
        guard !isOwnGroupSend(message) else { return }
        let (transaction, parsed) = HubRequest.parse(message.payload)
        func refuseAll(_ error: HomeError) {
            log("refused a command for group \(group): \(error)")
            respond(message, HubResponse.groupSummary(transaction: transaction, group: group, hub: topics.hub, ran: [],
                                                      refused: members.map { ($0.deviceID, error) }))
        }
        if message.retain {
            guard !message.payload.isEmpty else { return }
            refuseAll(.invalidCommand("retained requests are never executed (they would repeat at every reconnect); "
                                      + "publish without retain"))
            send(message.topic, [], qos: .atLeastOnce, retain: true)
            return
        }
        let request: HubRequest
        switch parsed {
        case .failure(let error): return refuseAll(error)
        case .success(let r): request = r
        }
        // A copy of a group command (QoS 1) is answered with the first one's summary, not run again.
        guard case .run(let key) = admit(message, transaction: transaction, what: "for group \(group)") else { return }
        runGroup(request.action, transaction: transaction, group: group, members: members) { [self] summary, ran in
            remember(key, summary, ran: ran)
            respond(message, summary)
        }
    }

    /// Runs a group request on `members` (this hub's, of `group`), each on its own lane when it has hardware, and
    /// calls `done` once with the summary when the last has answered, and whether anything ran. Shared by the group
    /// topic and the doors inside the hub (`groupRequest`).
    func runGroup(_ requested: HubRequest.Action, transaction: JSON, group: Int, members: [GroupMembership],
                  done: @escaping @Sendable (JSON, Bool) -> Void) {
        let collector = Locked(GroupCollector(expected: members.count))
        let finish: @Sendable (String, HomeError?) -> Void = { [self] device, error in
            let complete = collector.withLock { c -> GroupCollector? in
                c.record(device, error)
                return c.isComplete ? c : nil
            }
            guard let complete else { return }
            // In device order, whichever lane finished first.
            let summary = HubResponse.groupSummary(transaction: transaction, group: group, hub: topics.hub,
                                                   ran: complete.ran.sorted(),
                                                   refused: complete.refused.sorted { $0.device < $1.device })
            done(summary, !complete.ran.isEmpty)
        }
        for member in members {
            let action: HubRequest.Action
            do throws(HomeError) { action = try groupAction(requested, for: member) } catch {
                finish(member.deviceID, error)
                continue
            }
            let run: @Sendable () -> Void = { [self] in
                do throws(HomeError) {
                    _ = try execute(action, on: member.deviceID)
                    finish(member.deviceID, nil)
                } catch {
                    finish(member.deviceID, error)
                }
            }
            guard hasHardware(member.deviceID) else { run(); continue }
            if home.enqueue(on: member.deviceID, limit: requestsWaitingPerDevice, run) == .full {
                finish(member.deviceID, HomeError(.busy, "device '\(member.deviceID)' has requests waiting for its "
                                                  + "hardware; it did not run this group command"))
            }
        }
    }

    /// A group request as one member runs it: `command` or `update`, addressed to the member's device type (unless the
    /// request names one), with Groups' and Scenes Management's `groupId` filled in from the topic when left out.
    func groupAction(_ action: HubRequest.Action, for member: GroupMembership) throws(HomeError) -> HubRequest.Action {
        switch action {
        case .command(let type, let trait, let name, var arguments):
            let id = TraitID(qualifiedName: trait)
            let takesGroupID = home.registry.server(for: id)?.descriptor.command(named: name)?.fields
                .contains { $0.name == "groupId" } ?? false
            if (id == .groups || id == .scenesManagement), takesGroupID, case .object(var members) = arguments,
               !members.contains(where: { $0.key == "groupId" }) {
                members.append(("groupId", .int(member.group)))
                arguments = .object(members)
            }
            return .command(type: try Self.memberType(type, member), trait: trait, name: name, arguments: arguments)
        case .update(let type, let trait, let attributes):
            return .update(type: try Self.memberType(type, member), trait: trait, attributes: attributes)
        default:
            throw .invalidCommand(
                "a group takes a command or an update; names, rooms and get go to one device's set topic")
        }
    }

    private static func memberType(_ type: String?, _ member: GroupMembership) throws(HomeError) -> String {
        guard let type, type != member.type else { return member.type }
        throw HomeError(
            .unsupportedEndpoint,
            "device '\(member.deviceID)' is in group \(member.group) as \(member.type), not \(type)")
    }
}

/// The members' answers to one group command, until every member has answered.
struct GroupCollector: Sendable {
    let expected: Int
    private(set) var ran: [String] = []
    private(set) var refused: [(device: String, error: HomeError)] = []

    init(expected: Int) { self.expected = expected }

    var isComplete: Bool { ran.count + refused.count == expected }

    mutating func record(_ device: String, _ error: HomeError?) {
        if let error { refused.append((device, error)) } else { ran.append(device) }
    }
}
