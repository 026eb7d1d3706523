import HearthEngine
import HearthModel
import HearthMQTT
import HearthTestKit
import Testing

/// `hearth group …` against a real hub (MQTTHub) on a private broker.
@Suite(.timeLimit(.minutes(3))) struct GroupCLITests {
    @Test func addListSendScenesAndRemove() async throws {
        let rig = try await CLIRig()
        defer { rig.stop() }
        let add = try await rig.run(["group", "add", "3", "lamp", "--name", "Kitchen"])
        #expect(add.status == 0, "\(add)")
        #expect(add.stdout == "lamp is in group 3\n")
        #expect(try await rig.run(["group", "add", "3", "relay"]).status == 0)

        let list = try await rig.run(["group", "list"])
        #expect(list.status == 0, "\(list)")
        let rows = list.stdout.split(separator: "\n").map { $0.split(separator: " ", omittingEmptySubsequences: true) }
        #expect(rows.first == ["GROUP", "HUB", "DEVICE", "TYPE", "NAME", "SCENES"], "\(list)")
        #expect(rows.contains(["3", "test", "lamp", "DimmableLight", "Kitchen"]), "\(list)")
        #expect(rows.contains(["3", "test", "relay", "OnOffLight"]), "\(list)")

        let on = try await rig.run(["group", "send", "3", "onOff", "on"])
        #expect(on.status == 0, "\(on)")
        #expect(on.stdout == "test: ran lamp, relay\n")
        #expect(try rig.home.device("lamp").value(.onOff, "onOff") == .bool(true))
        #expect(try rig.home.device("relay").value(.onOff, "onOff") == .bool(true))

        // The relay has no levelControl: it refuses, says why, and the exit status says a member refused.
        let dim = try await rig.run(["group", "send", "3", "levelControl", "moveToLevel", "level=100"])
        #expect(dim.status == 1, "\(dim)")
        #expect(dim.stdout.hasPrefix("test: ran lamp; relay refused: unimplemented (unsupportedCluster): "), "\(dim)")
        #expect(try rig.home.device("lamp").value(.levelControl, "currentLevel") == .int(100))

        #expect(try await rig.run(["group", "scene", "store", "3", "1"]).status == 0)
        let scenes = try await rig.run(["group", "list", "3"])
        #expect(scenes.stdout.contains("1 (0s)"), "\(scenes)")
        let view = try await rig.run(["group", "scene", "view", "3", "1"])
        #expect(view.status == 0, "\(view)")
        #expect(
            view.stdout.contains("test/lamp: scene 1 '', 0s; cluster 6 attribute 0 = 1, cluster 8 attribute 0 = 100"),
            "\(view)")
        _ = try await rig.run(["group", "send", "3", "levelControl", "moveToLevel", "level=20"])
        let recall = try await rig.run(["group", "scene", "recall", "3", "1"])
        #expect(recall.status == 0, "\(recall)")
        #expect(try rig.home.device("lamp").value(.levelControl, "currentLevel") == .int(100))

        // groupId comes from the group for the commands that take one, and not for those that do not.
        let membership = try await rig.run(["group", "send", "3", "groups", "getGroupMembership"])
        #expect(membership.status == 0, "\(membership)")
        let viewGroup = try await rig.run(["group", "send", "3", "groups", "viewGroup"])
        #expect(viewGroup.stdout == "test: ran lamp, relay\n", "\(viewGroup)")

        let remove = try await rig.run(["group", "remove", "3", "relay"])
        #expect(remove.status == 0, "\(remove)")
        #expect(rig.home.groupMemberships().map(\.deviceID) == ["lamp"])
        let nobody = try await rig.run(["group", "send", "4", "onOff", "on"])
        #expect(nobody.status == 2, "\(nobody)")
        #expect(nobody.stderr.contains("no hub has a member of group 4"), "\(nobody)")
        let bad = try await rig.run(["group", "send", "0", "onOff", "on"])
        #expect(bad.status == 64, "\(bad)")
        #expect(bad.stderr.contains("group 0 is out of range; groups are 1…65535"), "\(bad)")
    }

    @Test func badAndRetainedGroupRequestsAreRefusedInTheSummaryAndChangeNothing() async throws {
        let rig = try await CLIRig()
        defer { rig.stop() }
        try rig.home.invoke(
            "lamp", trait: "groups", command: "addGroup", arguments: ["groupId": .int(3), "groupName": .string("")])
        #expect(
            await rig.waitForMessage {
                $0.topic == "hearth/test/groups" && String(decoding: $0.payload, as: UTF8.self).contains(#""group":3"#)
            })
        func summary(_ payload: String, retain: Bool = false, _ expected: String) async throws {
            try rig.watcher.publish(
                "hearth/groups/3/set", payload: Array(payload.utf8), qos: .atLeastOnce, retain: retain)
            #expect(
                await rig.waitForMessage {
                    $0.topic == "hearth/test/responses" && String(decoding: $0.payload, as: UTF8.self) == expected
                },
                "\(expected)")
        }
        try await summary(
            "not json",
            #"{"transaction":null,"group":3,"hub":"test","ok":false,"ran":[],"refused":[{"device":"lamp","#
                + #""error":{"code":"invalidArgument","status":"invalidCommand","message":"the request is not valid "#
                    + #"JSON: invalid literal at byte 0"}}]}"#
        )
        try await summary(
            #"{"transaction":"r","setName":"x"}"#,
            #"{"transaction":"r","group":3,"hub":"test","ok":false,"ran":[],"refused":[{"device":"lamp","#
                + #""error":{"code":"invalidArgument","status":"invalidCommand","message":"a group takes a command or "#
                    + #"an update; names, rooms and get go to one device's set topic"}}]}"#
        )
        try await summary(
            #"{"transaction":"t","type":"HumiditySensor","trait":"onOff","command":"on"}"#,
            #"{"transaction":"t","group":3,"hub":"test","ok":false,"ran":[],"refused":[{"device":"lamp","#
                + #""error":{"code":"notFound","status":"unsupportedEndpoint","message":"device 'lamp' is in group 3 "#
                    + #"as DimmableLight, not HumiditySensor"}}]}"#
        )
        try await summary(
            #"{"transaction":"k","trait":"onOff","command":"on"}"#, retain: true,
            #"{"transaction":"k","group":3,"hub":"test","ok":false,"ran":[],"refused":[{"device":"lamp","#
                + #""error":{"code":"invalidArgument","status":"invalidCommand","message":"retained requests are "#
                    + #"never executed (they would repeat at every reconnect); publish without retain"}}]}"#
        )
        #expect(try rig.home.device("lamp").value(.onOff, "onOff") == .bool(false))
        #expect(try rig.home.device("lamp").name == "Lamp")
    }
}
