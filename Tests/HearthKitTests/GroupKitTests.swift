// HearthKit's group API against two real hubs: the memberships they publish, and one command for every member.
import HearthKit
import HearthTestKit
import Testing

@Suite struct GroupKitTests {
    @Test(.timeLimit(.minutes(1)))
    func membersOfTwoHubsAndOneCommandForAll() async throws {
        let rig = try await HubRig()
        for hub in ["x", "y"] {
            try rig.start(
                hub, devices: "  - {id: lamp-\(hub), type: DimmableLight}",
                extra:
                    "groups: [{id: 2, name: Hall, members: [lamp-\(hub)], scenes: [{id: 1, name: Dim, transitionTime: "
                        + "1500ms, values: {levelControl: {currentLevel: 40}}}]}]")
        }
        let home = try await rig.home(waitingFor: ["lamp-x", "lamp-y"])
        defer { home.close() }
        // Retained memberships come after the summaries and statuses that made the lamps online (HearthKit subscribes
        // to `+/groups` last), so a home that connected after both hubs were up may not have read them yet.
        #expect(await poll(within: .seconds(10)) { home.groupMembers().count == 2 })
        let members = home.groupMembers()
        #expect(members.map { "\($0.group) \($0.hub) \($0.device) \($0.type) \($0.name)" }
                == ["2 x lamp-x DimmableLight Hall", "2 y lamp-y DimmableLight Hall"])
        #expect(members.first?.scenes.map { "\($0.id) \($0.name) \($0.transitionTime)" } == ["1 Dim 1500"])

        let summaries = try await home.sendToGroup(2, [("trait", .string("onOff")), ("command", .string("off"))])
        #expect(summaries.map(\.hub) == ["x", "y"])
        #expect(summaries.allSatisfy { $0.isOK })
        #expect(summaries.map(\.ran) == [["lamp-x"], ["lamp-y"]])
        let off = try await first(home.devices().batched()) { devices in
            devices.filter { $0.id.hasPrefix("lamp-") }.allSatisfy {
                $0.types[DimmableLightDeviceType.self]?.matterTraits.onOffTrait?.attributes.onOff == false
            }
        }
        #expect(off.count == 2)

        let refused = try await home.sendToGroup(2, [("trait", .string("switch")), ("command", .string("x"))])
        #expect(refused.map { $0.refused.first?.error.status } == [.unsupportedCluster, .unsupportedCluster])
        let nobody = try await home.sendToGroup(9, [("trait", .string("onOff")), ("command", .string("on"))])
        #expect(nobody.isEmpty)
    }
}
