import HearthEngine
import HearthModel
import Testing

/// Groups (0x0004) and Scenes Management (0x0062) on the injected clock: every command and status of
/// docs/clusters/groups.md and docs/clusters/scenes-management.md, recall transitions, persistence.
@Suite struct GroupsTests {
    private func call(_ r: Rig, _ command: String, _ args: [String: Value] = [:]) throws -> [String: Value]? {
        try r.home.invoke(r.device, trait: "groups", command: command, arguments: args)
    }

    @Test func lightsHaveGroupsAndScenesWithNameSupport() throws {
        let r = try Rig(.dimmableLight)
        #expect(try r.read(.groups, "nameSupport") == .int(0x80))
        #expect(try r.read(.scenesManagement, "sceneTableSize") == .int(16))
        for type in [DeviceTypeDescriptor.onOffLight, .onOffPlugInUnit] {
            #expect(type.requiredTraits.contains(.groups))
        }
        #expect(!DeviceTypeDescriptor.contactSensor.allows(.groups))
    }

    @Test func addViewRemoveWithTheSpecsStatuses() throws {
        let r = try Rig(.dimmableLight)
        #expect(
            try call(r, "addGroup", ["groupId": .int(7), "groupName": .string("Downstairs")]) == ["groupId": .int(7)])
        #expect(
            try call(r, "viewGroup", ["groupId": .int(7)]) == ["groupId": .int(7), "groupName": .string("Downstairs")])
        // Adding again renames (SUCCESS).
        _ = try call(r, "addGroup", ["groupId": .int(7), "groupName": .string("Down")])
        #expect(try call(r, "viewGroup", ["groupId": .int(7)])?["groupName"] == .string("Down"))
        // GroupID 0 and a name over 16 bytes: CONSTRAINT_ERROR, nothing changed.
        let zero = homeError { _ = try call(r, "addGroup", ["groupId": .int(0), "groupName": .string("")]) }
        #expect(zero?.status == .constraintError)
        #expect(zero?.message == "addGroup.groupId 0 is out of range; allowed: 1…65535")
        let long = homeError {
            _ = try call(r, "addGroup", ["groupId": .int(8), "groupName": .string("seventeen bytes!!")])
        }
        #expect(long?.status == .constraintError)
        #expect(long?.message == "addGroup.groupName is 17 bytes long; at most 16 are allowed")
        #expect(try call(r, "getGroupMembership")?["groupList"] == .list([.int(7)]))  // nothing changed
        #expect(homeError { _ = try call(r, "viewGroup", ["groupId": .int(0)]) }?.status == .constraintError)
        // Not a member: NOT_FOUND, with what it is in.
        let missing = homeError { _ = try call(r, "viewGroup", ["groupId": .int(8)]) }
        #expect(missing?.status == .notFound)
        #expect(missing?.message == "not in group 8; its groups are 7")
        #expect(homeError { _ = try call(r, "removeGroup", ["groupId": .int(8)]) }?.status == .notFound)
        #expect(homeError { _ = try call(r, "removeGroup", ["groupId": .int(0)]) }?.status == .constraintError)
        // Wrong kinds and unknown fields, in Matter's order.
        #expect(
            homeError { _ = try call(r, "addGroup", ["groupId": .string("7"), "groupName": .string("")]) }?.status
                == .invalidDataType)
        #expect(homeError { _ = try call(r, "addGroup", ["groupId": .int(7)]) }?.status == .invalidCommand)
        #expect(try call(r, "removeGroup", ["groupId": .int(7)]) == ["groupId": .int(7)])
        #expect(try call(r, "getGroupMembership")?["groupList"] == .list([]))
    }

    @Test func membershipCapacityAndFilter() throws {
        let r = try Rig(.onOffLight)
        for id in 1...16 { _ = try call(r, "addGroup", ["groupId": .int(id * 10), "groupName": .string("")]) }
        let full = homeError { _ = try call(r, "addGroup", ["groupId": .int(5), "groupName": .string("")]) }
        #expect(full?.status == .resourceExhausted)
        #expect(try call(r, "getGroupMembership")?["capacity"] == .int(0))
        let some = try call(r, "getGroupMembership", ["groupList": .list([.int(10), .int(20), .int(999)])])
        #expect(some?["groupList"] == .list([.int(10), .int(20)]))
        #expect(
            homeError { _ = try call(r, "getGroupMembership", ["groupList": .list([.int(0)])]) }?.status
                == .constraintError)
        try r.home.invoke(r.device, trait: "groups", command: "removeAllGroups")
        #expect(try call(r, "getGroupMembership") == ["capacity": .int(16), "groupList": .list([])])
    }

    @Test func addGroupIfIdentifyingAddsOnlyWhileIdentifying() throws {
        let r = try Rig(.dimmableLight)
        try r.invoke("groups", "addGroupIfIdentifying", ["groupId": .int(3), "groupName": .string("x")])
        #expect(try call(r, "getGroupMembership")?["groupList"] == .list([]))
        try r.invoke("identify", "identify", ["identifyTime": .int(5)])
        try r.invoke("groups", "addGroupIfIdentifying", ["groupId": .int(3), "groupName": .string("x")])
        #expect(try call(r, "getGroupMembership")?["groupList"] == .list([.int(3)]))
    }

    @Test func tableChangesAreEventsAndTheTableSurvivesARestart() throws {
        let r = try Rig(.dimmableLight)
        _ = try call(r, "addGroup", ["groupId": .int(2), "groupName": .string("Hall")])
        #expect(r.log.all.contains { if case .table(_, .groups) = $0.change { true } else { false } })
        #expect(r.home.groupMemberships().map(\.group) == [2])
        let saved = try r.home.saved("lamp")
        #expect(saved.tables["DimmableLight"]?["groups"] == SavedValue(.structure(["2": .string("Hall")])))
        let again = try Rig(.dimmableLight, saved: saved)
        #expect(try call(again, "viewGroup", ["groupId": .int(2)])?["groupName"] == .string("Hall"))
    }

    @Test func configuredGroupsAreAddedAtEveryStartAndSavedOnesKept() throws {
        var saved = SavedDevice()
        saved.tables["DimmableLight"] = ["groups": SavedValue(.structure(["9": .string("Saved")]))]
        let r = try Rig(
            .dimmableLight, traits: [TraitConfiguration(.groups, table: .structure(["1": .string("Configured")]))],
            saved: saved)
        #expect(try call(r, "getGroupMembership")?["groupList"] == .list([.int(1), .int(9)]))
        let bad = homeError {
            _ = try Rig(.dimmableLight, traits: [TraitConfiguration(.groups, table: .structure(["0": .string("")]))])
        }
        #expect(bad?.message.contains("group(s) 0 skipped") == true)
    }
}

@Suite struct ScenesTests {
    private func scenes(_ r: Rig, _ command: String, _ args: [String: Value]) throws -> [String: Value]? {
        try r.home.invoke(r.device, trait: "scenesManagement", command: command, arguments: args)
    }

    private func inGroup(_ id: Int = 1) throws -> Rig {
        let r = try Rig(.dimmableLight)
        try r.invoke("groups", "addGroup", ["groupId": .int(id), "groupName": .string("")])
        return r
    }

    static func fieldSets(onOff: Bool, level: Int) -> Value {
        .list([
            .structure(["clusterId": .int(6),
                        "attributeValueList": .list([.structure(["attributeId": .int(0),
                                                                 "value": .int(onOff ? 1 : 0)])])]),
            .structure(["clusterId": .int(8),
                        "attributeValueList": .list([.structure(["attributeId": .int(0), "value": .int(level)])])]),
        ])
    }

    @Test func storeChangeRecallMovesWithinTheTransition() throws {
        let r = try inGroup()
        try r.invoke("onOff", "on")
        try r.invoke("levelControl", "moveToLevel", ["level": .int(200)])
        #expect(
            try scenes(r, "storeScene", ["groupId": .int(1), "sceneId": .int(4)]) == [
                "groupId": .int(1), "sceneId": .int(4)
            ])
        try r.invoke("levelControl", "moveToLevel", ["level": .int(50)])
        try r.invoke(
            "scenesManagement", "recallScene", ["groupId": .int(1), "sceneId": .int(4), "transitionTime": .int(1000)])
        #expect(try r.read(.levelControl, "remainingTime") == .int(10))
        r.advance(500)
        let mid = try #require(try r.level())
        #expect(mid > 100 && mid < 150)
        r.advance(500)
        #expect(try r.level() == 200)
        #expect(try r.onOff() == true)
        let info = try r.read(.scenesManagement, "fabricSceneInfo")?.listValue?.first?.structureValue
        #expect(info?["currentScene"] == .int(4))
        #expect(info?["sceneValid"] == .bool(true))
        // A client's change to what a scene stores makes it invalid (Matter's SceneValid); the scene stays current.
        r.log.clear()
        try r.invoke("levelControl", "moveToLevel", ["level": .int(90)])
        let after = try r.read(.scenesManagement, "fabricSceneInfo")?.listValue?.first?.structureValue
        #expect(after?["sceneValid"] == .bool(false))
        #expect(after?["currentScene"] == .int(4))
        #expect(
            r.log.all.contains {
                if case .attribute(_, .scenesManagement, "fabricSceneInfo", _) = $0.change { true } else { false }
            })
    }

    /// ColorControl joins scenes with its one conformance: a tunable-white light's temperature is stored and recalled
    /// over the scene's transition, with its level.
    @Test func aColorTemperatureLightRecallsItsTemperatureWithinTheTransition() throws {
        let r = try Rig(.colorTemperatureLight)
        try r.invoke("groups", "addGroup", ["groupId": .int(1), "groupName": .string("")])
        try r.invoke("onOff", "on")
        try r.invoke("levelControl", "moveToLevel", ["level": .int(200)])
        try r.invoke(
            "colorControl", "moveToColorTemperature", ["colorTemperatureMireds": .int(250), "transitionTime": .int(0)])
        _ = try scenes(r, "storeScene", ["groupId": .int(1), "sceneId": .int(2)])
        try r.invoke(
            "colorControl", "moveToColorTemperature", ["colorTemperatureMireds": .int(400), "transitionTime": .int(0)])
        try r.invoke("levelControl", "moveToLevel", ["level": .int(100)])
        try r.invoke(
            "scenesManagement", "recallScene", ["groupId": .int(1), "sceneId": .int(2), "transitionTime": .int(1000)])
        r.advance(500)
        let mid = try #require(try r.read(.colorControl, "colorTemperatureMireds")?.intValue)
        #expect(mid > 250 && mid < 400)
        r.advance(500)
        #expect(try r.read(.colorControl, "colorTemperatureMireds") == .int(250))
        #expect(try r.level() == 200)
    }

    @Test func recallUsesTheScenesOwnTransitionAndTurnsAnOffLightOnFromTheMinimum() throws {
        let r = try inGroup()
        _ = try scenes(
            r, "addScene",
            [
                "groupId": .int(1), "sceneId": .int(1), "transitionTime": .int(2000),
                "sceneName": .string("Evening"), "extensionFieldSetStructs": Self.fieldSets(onOff: true, level: 101)
            ])
        try r.invoke("onOff", "off")
        try r.invoke("scenesManagement", "recallScene", ["groupId": .int(1), "sceneId": .int(1)])
        #expect(try r.onOff() == true)
        r.advance(1000)
        let mid = try #require(try r.level())
        #expect(mid > 40 && mid < 60)  // halfway from 1 to 101
        r.advance(1000)
        #expect(try r.level() == 101)
        let view = try scenes(r, "viewScene", ["groupId": .int(1), "sceneId": .int(1)])
        #expect(view?["sceneName"] == .string("Evening"))
        #expect(view?["transitionTime"] == .int(2000))
        #expect(view?["extensionFieldSetStructs"] == Self.fieldSets(onOff: true, level: 101))
    }

    @Test func everyStatus() throws {
        let r = try inGroup()
        let notInGroup = homeError { _ = try scenes(r, "storeScene", ["groupId": .int(2), "sceneId": .int(1)]) }
        #expect(notInGroup?.status == .invalidCommand)
        #expect(notInGroup?.message == "storeScene: the device is not in group 2; its groups are 1")
        #expect(
            homeError { _ = try scenes(r, "viewScene", ["groupId": .int(1), "sceneId": .int(9)]) }?.status == .notFound)
        #expect(
            homeError { _ = try scenes(r, "removeScene", ["groupId": .int(1), "sceneId": .int(9)]) }?.status
                == .notFound)
        #expect(
            homeError { try r.invoke("scenesManagement", "recallScene", ["groupId": .int(1), "sceneId": .int(9)]) }?
                .status == .notFound)
        #expect(
            homeError { _ = try scenes(r, "storeScene", ["groupId": .int(1), "sceneId": .int(255)]) }?.status
                == .constraintError)
        let slow = homeError {
            _ = try scenes(
                r, "addScene",
                [
                    "groupId": .int(1), "sceneId": .int(1), "transitionTime": .int(60_000_001),
                    "sceneName": .string("")
                ])
        }
        #expect(slow?.status == .constraintError)
        let badLevel = homeError {
            _ = try scenes(
                r, "addScene",
                [
                    "groupId": .int(1), "sceneId": .int(1), "transitionTime": .int(0),
                    "sceneName": .string(""), "extensionFieldSetStructs": Self.fieldSets(onOff: true, level: 300)
                ])
        }
        #expect(badLevel?.status == .constraintError)
        let badAttribute = homeError {
            _ = try scenes(
                r, "addScene",
                [
                    "groupId": .int(1), "sceneId": .int(1), "transitionTime": .int(0),
                    "sceneName": .string(""),
                    "extensionFieldSetStructs": .list([
                        .structure([
                            "clusterId": .int(8),
                            "attributeValueList":
                                .list([.structure(["attributeId": .int(0x11), "value": .int(3)])])
                        ])
                    ])
                ])
        }
        #expect(badAttribute?.status == .invalidCommand)
        #expect(try scenes(r, "getSceneMembership", ["groupId": .int(1)])?["sceneList"] == .list([]))
        // Group 0 (the global scene's) needs no membership; clusters the light lacks are ignored.
        _ = try scenes(
            r, "addScene",
            [
                "groupId": .int(0), "sceneId": .int(1), "transitionTime": .int(0), "sceneName": .string(""),
                "extensionFieldSetStructs": .list([
                    .structure(["clusterId": .int(0x300), "attributeValueList": .list([])])
                ])
            ])
        for s in 0..<15 { _ = try scenes(r, "storeScene", ["groupId": .int(1), "sceneId": .int(s)]) }
        #expect(
            homeError { _ = try scenes(r, "storeScene", ["groupId": .int(1), "sceneId": .int(200)]) }?.status
                == .resourceExhausted)
        #expect(try scenes(r, "getSceneMembership", ["groupId": .int(1)])?["capacity"] == .int(0))
        #expect(try scenes(r, "removeAllScenes", ["groupId": .int(1)]) == ["groupId": .int(1)])
        #expect(try scenes(r, "getSceneMembership", ["groupId": .int(1)])?["capacity"] == .int(15))
    }

    @Test func removingAGroupRemovesItsScenesAndTheTablesSurviveARestart() throws {
        let r = try inGroup()
        try r.invoke("groups", "addGroup", ["groupId": .int(2), "groupName": .string("")])
        _ = try scenes(r, "storeScene", ["groupId": .int(1), "sceneId": .int(1)])
        _ = try scenes(r, "storeScene", ["groupId": .int(2), "sceneId": .int(1)])
        let again = try Rig(.dimmableLight, saved: try r.home.saved("lamp"))
        #expect(try scenes(again, "getSceneMembership", ["groupId": .int(2)])?["sceneList"] == .list([.int(1)]))
        try r.invoke("groups", "removeGroup", ["groupId": .int(1)])
        try r.invoke("groups", "addGroup", ["groupId": .int(1), "groupName": .string("")])
        #expect(try scenes(r, "getSceneMembership", ["groupId": .int(1)])?["sceneList"] == .list([]))
        #expect(try scenes(r, "getSceneMembership", ["groupId": .int(2)])?["sceneList"] == .list([.int(1)]))
        try r.invoke("groups", "removeAllGroups")
        #expect(r.home.groupMemberships().isEmpty)
        #expect(try scenes(r, "getSceneMembership", ["groupId": .int(0)])?["sceneList"] == .list([]))
    }
}
