import HearthContract
import HearthEngine
@testable import HearthHub
import HearthJSON
import HearthMQTT
import HearthModel
import HearthTestKit
import Testing

/// The hall switch's press, as the engine reports it.
let hallPress = HomeEvent(deviceID: "hall-switch", change: .event(type: "GenericSwitch", trait: .switchTrait,
                                                                   name: "initialPress", fields: [:]))

@Suite struct PeerBindingTests {
    @Test(.timeLimit(.minutes(1))) func aSilentOwnerGetsTheCommandOnceMoreThenTheFailureIsLogged() async throws {
        let rig = try PeerRig(bindings: [PeerBinding(from: "hall-switch", hub: "b", device: "porch", trait: "onOff",
                                                     command: "toggle")])
        rig.peer("b", "online", devices: ["porch"])
        let runner = Task { await rig.router.run() }
        defer { runner.cancel() }
        rig.router.fireBindings([hallPress])
        #expect(rig.messages(on: "hearth/b/devices/porch/set").count == 1)

        rig.clock.advance(by: 3_000)
        #expect(await eventually { rig.messages(on: "hearth/b/devices/porch/set").count == 2 })
        #expect(rig.logs.all == ["binding hall-switch → b/porch onOff.toggle: no answer from hub 'b' in 3.0 seconds; "
                                 + "sending it again once (run at most once)"])
        // The same message again: an owner that ran the first (its answer lost on the way) answers the copy and does
        // not toggle the lamp back.
        #expect(
            rig.messages(on: "hearth/b/devices/porch/set").map { $0["transaction"] } == [.string("a-1"), .string("a-1")]
        )
        let sets = rig.sent.all.filter { $0.topic == "hearth/b/devices/porch/set" }
        #expect(sets[0].payload == sets[1].payload)

        rig.clock.advance(by: 3_000)
        #expect(await eventually { rig.logs.all.count == 2 })
        #expect(
            rig.logs.all.last
                == "binding hall-switch → b/porch onOff.toggle failed: deadlineExceeded (timeout): hub 'b' did "
                + "not answer within 3.0 seconds: the request may have run there (its answer may have been lost on "
                + "the way back); read the device's state before sending it again")
        #expect(rig.messages(on: "hearth/b/devices/porch/set").count == 2)
        #expect(rig.responses.isEmpty)  // a binding's command has no client to answer
    }

    @Test func aBindingToAnOfflineOwnerFailsFastAndWorksWhenItIsBack() throws {
        let rig = try PeerRig(bindings: [PeerBinding(from: "hall-switch", hub: "b", device: "porch", trait: "onOff",
                                                     command: "toggle")])
        rig.peer("b", "offline", devices: ["porch"])
        rig.router.fireBindings([hallPress])
        #expect(
            rig.logs.all == [
                "binding hall-switch → b/porch onOff.toggle failed: unavailable (failure): hub 'b' is offline; "
                    + "try again when it is online"
            ])
        rig.peer("b", "online", devices: ["porch"])
        rig.router.fireBindings([hallPress])
        #expect(rig.messages(on: "hearth/b/devices/porch/set").count == 1)
        _ = rig.router.handle(
            MQTTMessage(topic: "hearth/b/responses", payload: Array(#"{"transaction":"a-1","ok":true}"#.utf8)))
        #expect(rig.logs.all.count == 1)
        #expect(rig.router.forwarder.waitingCount == 0)
    }

    @Test func aBindingSendsExactlyTheConfiguredArguments() throws {
        let arguments = try JSON.parse(
            Array(
                (#"{"level":200,"transitionTime":null,"optionsMask":{"executeIfOff":true},"#
                    + #""optionsOverride":{"executeIfOff":false}}"#).utf8))
        let rig = try PeerRig(bindings: [
            PeerBinding(
                from: "hall-switch", hub: "b", device: "porch", type: "DimmableLight",
                trait: "levelControl", command: "moveToLevel", arguments: arguments)
        ])
        rig.peer("b", "online", devices: ["porch"])
        rig.router.fireBindings([hallPress])
        let forwarded =
            #"{"transaction":"a-1","type":"DimmableLight","trait":"levelControl","command":"moveToLevel","#
            + #""args":{"level":200,"transitionTime":null,"optionsMask":{"executeIfOff":true},"#
            + #""optionsOverride":{"executeIfOff":false}},"forwardedBy":"a"}"#
        #expect(rig.messages(on: "hearth/b/devices/porch/set").map(\.text) == [forwarded])
    }

    @Test func aLocalBindingRunsItsCommandWithEveryArgument() throws {
        let rig = try PeerRig(bindings: [
            PeerBinding(
                from: "hall-switch", hub: "a", device: "lamp", trait: "levelControl",
                command: "moveToLevelWithOnOff",
                arguments: .object([("level", .int(100)), ("transitionTime", .int(0))]))
        ])
        rig.router.fireBindings([hallPress])
        rig.home.drainLanes()  // a local binding runs on its target's lane
        #expect(rig.logs.all == [])
        #expect(try rig.home.device("lamp").trait(.levelControl)?["currentLevel"]?.value == .int(100))
        #expect(try rig.home.device("lamp").trait(.onOff)?["onOff"]?.value == .bool(true))
    }

    /// An argument that cannot be converted used to be dropped (`try?`), and the command ran
    /// with the field's default instead (here: at once instead of over 2.5 s). Now nothing runs and it is logged.
    @Test func aLocalBindingWithAnArgumentItCannotConvertRunsNothing() throws {
        let rig = try PeerRig(bindings: [
            PeerBinding(
                from: "hall-switch", hub: "a", device: "lamp", trait: "levelControl",
                command: "moveToLevelWithOnOff",
                arguments: .object([("level", .int(100)), ("transitionTime", .double(2.5))]))
        ])
        let before = try rig.home.device("lamp").trait(.levelControl)?["currentLevel"]?.value
        rig.router.fireBindings([hallPress])
        rig.home.drainLanes()  // a local binding runs on its target's lane
        #expect(try rig.home.device("lamp").trait(.levelControl)?["currentLevel"]?.value == before)
        #expect(try rig.home.device("lamp").trait(.onOff)?["onOff"]?.value == .bool(false))
        #expect(
            rig.logs.all == [
                "binding hall-switch → a/lamp levelControl.moveToLevelWithOnOff failed: invalidArgument "
                    + "(invalidDataType): moveToLevelWithOnOff.transitionTime must be a whole number, not 2.5"
            ])
    }
}
