import HearthEngine
@testable import HearthHardware
import HearthHardwareLinux
import HearthLinux
@testable import HearthSimulator
import HearthModel
import HearthTestKit
import Testing

@Suite("PWM dimmer binding")
struct DimmerTests {
    func pwm(_ tree: SysfsTree, _ attribute: String) -> String? {
        tree.contents(of: "/sys/class/pwm/pwmchip0/pwm0/\(attribute)").map { String($0.filter { !$0.isNewline }) }
    }

    @Test func gammaAndMinimumDuty() {
        #expect(DimmerBinding.dutyFraction(level: 254, gamma: 2.2, minimumDuty: 0) == 1)
        #expect(abs(DimmerBinding.dutyFraction(level: 127, gamma: 2.2, minimumDuty: 0) - 0.217637) < 0.00001)
        #expect(abs(DimmerBinding.dutyFraction(level: 127, gamma: 1, minimumDuty: 0) - 0.5) < 0.00001)
        #expect(DimmerBinding.dutyFraction(level: 1, gamma: 2.2, minimumDuty: 0.02) > 0.02)
        #expect(DimmerBinding.dutyFraction(level: 1, gamma: 2.2, minimumDuty: 0.02) < 0.0201)
        #expect(DimmerBinding.dutyFraction(level: 254, gamma: 2.2, minimumDuty: 0.02) == 1)
        // Monotonic over the whole range.
        let curve = (1...254).map { DimmerBinding.dutyFraction(level: $0, gamma: 2.2, minimumDuty: 0.05) }
        #expect(zip(curve, curve.dropFirst()).allSatisfy { $0 < $1 })
    }

    @Test func startsAtItsStartUpLevelWithTheRelayOn() throws {
        let tree = try SysfsTree()
        try tree.addPWMChip(0, channels: 2)
        try tree.addPWMChannel(chip: 0, channel: 0, period: 0, dutyCycle: 0)
        let rig = try Rig(sysfs: tree)
        let dimmer = try #require(
            try rig.add(
                "lamp", .dimmableLight,
                binding: "{kind: pwmDimmer, pwm: dimmer-1, relay: dimmer-relay, frequency: 2000, minimumDuty: 0.02}",
                traits: [
                    TraitConfiguration(.onOff, attributes: ["startUpOnOff": .int(1)]),
                    TraitConfiguration(.levelControl, attributes: ["startUpCurrentLevel": .int(127)])
                ]) as? DimmerBinding)
        try rig.start()
        #expect(pwm(tree, "period") == "500000")
        #expect(pwm(tree, "enable") == "1")
        #expect(pwm(tree, "polarity") == "normal")
        #expect(pwm(tree, "duty_cycle") == String(dimmer.dutyCycle(for: EndpointOutput(onOff: true, level: 127))))
        #expect(rig.simulation.output(try key(rig, "dimmer-relay"))?.history == [true])
        #expect(try rig.connectivity("lamp", "levelControl") == .directOnline)
    }

    @Test func everyTransitionStepReachesThePWM() throws {
        let tree = try SysfsTree()
        try tree.addPWMChip(0, channels: 2)
        try tree.addPWMChannel(chip: 0, channel: 0)
        let rig = try Rig(sysfs: tree)
        let dimmer = try #require(
            try rig.add(
                "lamp", .dimmableLight,
                binding: "{kind: pwmDimmer, pwm: dimmer-1, relay: dimmer-relay}") as? DimmerBinding)
        try rig.start()
        try rig.home.invoke("lamp", trait: "levelControl", command: "moveToLevelWithOnOff",
                            arguments: ["level": .int(254), "transitionTime": .int(0)])
        try rig.home.invoke("lamp", trait: "levelControl", command: "moveToLevel",
                            arguments: ["level": .int(54), "transitionTime": .int(10)])
        var seen: [UInt64] = []
        for _ in 0..<50 {
            rig.advance(by: 20)
            let output = try rig.home.output("lamp", type: "DimmableLight")
            let expected = dimmer.dutyCycle(for: output)
            #expect(pwm(tree, "duty_cycle") == String(expected), "at \(rig.clock.now), level \(output.level ?? 0)")
            seen.append(expected)
        }
        #expect(Set(seen).count == 50, "each of the 50 steps set a new duty")
        #expect(try rig.value("lamp", "levelControl", "currentLevel") == .int(54))
        #expect(seen.last == dimmer.dutyCycle(for: EndpointOutput(onOff: true, level: 54)))
    }

    /// A fade longer than the probe interval: the steps' writes show the chip answers, so the probe never writes a
    /// step's duty again; once the fade ends and the dimmer is idle, the probe writes again.
    @Test func aLongFadeWritesEachStepOnceAndTheProbeWaitsUntilItEnds() throws {
        let tree = try SysfsTree()
        try tree.addPWMChip(0, channels: 2)
        try tree.addPWMChannel(chip: 0, channel: 0)
        let rig = try Rig(sysfs: tree)
        let writes = Recorder<UInt64>()
        var hardware = try #require(rig.hardware as? MixedHardware)
        hardware.dutyWrites = writes
        rig.hardware = hardware
        try rig.add("lamp", .dimmableLight, binding: "{kind: pwmDimmer, pwm: dimmer-1}")
        try rig.start()
        try rig.home.invoke("lamp", trait: "levelControl", command: "moveToLevelWithOnOff",
                            arguments: ["level": .int(2), "transitionTime": .int(0)])  // 1 would turn it off
        rig.advance(by: 20)
        writes.removeAll()
        // 2 → 254 over 12 s: 252 distinct steps, more than two probe intervals.
        try rig.home.invoke("lamp", trait: "levelControl", command: "moveToLevel",
                            arguments: ["level": .int(254), "transitionTime": .int(120)])
        for _ in 0..<(12_000 / 20) { rig.advance(by: 20) }
        #expect(try rig.value("lamp", "levelControl", "currentLevel") == .int(254))
        let fade = writes.all
        #expect(fade.count == 252, "one write per level step")
        #expect(Set(fade).count == fade.count, "no duty written twice")
        // Idle: the probe writes the last duty again within an interval.
        rig.advance(by: outputProbeInterval + 20)
        #expect(writes.all.count > fade.count)
        #expect(writes.all.last == fade.last)
    }

    @Test func theRelayCutsPowerWhenTheLightIsOff() throws {
        let tree = try SysfsTree()
        try tree.addPWMChip(0, channels: 2)
        try tree.addPWMChannel(chip: 0, channel: 0)
        let rig = try Rig(sysfs: tree)
        try rig.add("lamp", .dimmableLight, binding: "{kind: pwmDimmer, pwm: dimmer-1, relay: dimmer-relay}",
                    traits: [TraitConfiguration(.levelControl, attributes: ["offTransitionTime": .int(2)])])
        try rig.start()
        let relay = try key(rig, "dimmer-relay")
        #expect(rig.simulation.output(relay)?.history == [false])
        #expect(pwm(tree, "duty_cycle") == "0")
        try rig.home.invoke("lamp", trait: "onOff", command: "on")
        #expect(rig.simulation.output(relay)?.value == true)
        rig.advance(by: 1000)
        #expect(pwm(tree, "duty_cycle") == "1000000")
        try rig.home.invoke("lamp", trait: "onOff", command: "off")
        // Fading out over 0.2 s: still powered until the fade ends.
        rig.advance(by: 100)
        #expect(rig.simulation.output(relay)?.value == true)
        #expect(pwm(tree, "duty_cycle") != "0")
        rig.advance(by: 200)
        #expect(pwm(tree, "duty_cycle") == "0")
        #expect(rig.simulation.output(relay)?.value == false)
        #expect(rig.simulation.output(relay)?.history == [false, true, false])
    }

    /// Replays the simulated board's writes and returns every moment the relay switched while the PWM was lighting
    /// the load (enabled at a duty above 0), with the duty at that moment.
    func relaySwitchesUnderLoad(_ operations: [SimulatedHardware.Operation], relay: String, pwm: String) -> [String] {
        var duty: UInt64 = 0, relayOn: Bool?
        var violations: [String] = []
        for operation in operations {
            switch operation {
            case .pwmStart(pwm, let d), .pwmDuty(pwm, let d): duty = d
            case .pwmStop(pwm): duty = 0
            case .output(relay, let value):
                if value != relayOn, duty > 0 { violations.append("relay \(value ? "on" : "off") at duty \(duty)") }
                relayOn = value
            default: break
            }
        }
        return violations
    }

    @Test func theRelayNeverSwitchesWhileThePWMIsLit() throws {
        let rig = try Rig()
        let dimmer = try #require(try rig.add(
            "lamp", .dimmableLight, binding: "{kind: pwmDimmer, pwm: dimmer-1, relay: dimmer-relay}",
            traits: [TraitConfiguration(.onOff, attributes: ["startUpOnOff": .int(1)]),
                     TraitConfiguration(.levelControl, attributes: ["startUpCurrentLevel": .int(200),
                                                                    "offTransitionTime": .int(2)])]) as? DimmerBinding)
        let relay = try key(rig, "dimmer-relay"), pwm = "pwmchip0/pwm0"
        let lit = dimmer.dutyCycle(for: EndpointOutput(onOff: true, level: 200))
        try rig.start()
        // Started lit: the channel is enabled dark, the relay closes, then the light comes up.
        #expect(rig.simulation.operations == [.pwmStart(key: pwm, dutyCycleNanoseconds: 0),
                                              .output(key: relay, value: true),
                                              .pwmDuty(key: pwm, nanoseconds: lit)])
        // Off with a fade, on again, and a fault that makes the binding request its hardware again while lit.
        try rig.home.invoke("lamp", trait: "onOff", command: "off")
        rig.advance(by: 300)
        try rig.home.invoke("lamp", trait: "onOff", command: "on")
        rig.simulation.failWrites(key: pwm, HardwareError(.gone, message: "gone", operation: "write", context: pwm))
        #expect(throws: HomeError.self) {
            try rig.home.invoke("lamp", trait: "levelControl", command: "moveToLevel",
                                arguments: ["level": .int(100), "transitionTime": .int(0)])
        }
        rig.simulation.failWrites(key: pwm, nil)
        rig.tick()
        rig.advance(by: 1000)
        #expect(try rig.connectivity("lamp", "levelControl") == .directOnline)
        #expect(rig.simulation.output(relay)?.value == true)
        #expect(rig.simulation.pwm(pwm)?.dutyCycleNanoseconds == lit)
        dimmer.stop()
        #expect(rig.simulation.output(relay)?.history == [true, false, true, false, true, false])
        #expect(relaySwitchesUnderLoad(rig.simulation.operations, relay: relay, pwm: pwm) == [])
    }

    @Test func inversedPolarityAndStopReleasesTheChannel() throws {
        let tree = try SysfsTree()
        try tree.addPWMChip(0, channels: 2)
        try tree.addPWMChannel(chip: 0, channel: 0)
        let rig = try Rig(sysfs: tree)
        let dimmer = try rig.add(
            "lamp", .dimmableLight, binding: "{kind: pwmDimmer, pwm: dimmer-1, polarity: inversed}")
        try rig.start()
        #expect(pwm(tree, "polarity") == "inversed")
        dimmer?.stop()
        #expect(pwm(tree, "enable") == "0")
        #expect(pwm(tree, "duty_cycle") == "0")
        #expect(tree.contents(of: "/sys/class/pwm/pwmchip0/unexport") == "0")
    }

    @Test func aChannelThatCannotBeExportedIsOfflineUntilItAppears() throws {
        let tree = try SysfsTree()
        try tree.addPWMChip(0, channels: 2)
        let rig = try Rig(sysfs: tree, pwmExportAttempts: 1)
        try rig.add("lamp", .dimmableLight, binding: "{kind: pwmDimmer, pwm: dimmer-1}")
        try rig.add("porch", .onOffLight, binding: "{kind: relay, pin: relay-1}")
        try rig.start()
        #expect(try rig.connectivity("lamp", "onOff") == SourceConnectivity(.offline, .direct))
        #expect(try rig.connectivity("lamp", "levelControl") == SourceConnectivity(.offline, .direct))
        #expect(rig.logs.contains("lamp DimmableLight (pwmDimmer): offline: requesting the dimmer's hardware failed: "
            + "exported channel 0 of pwmchip0 but \(tree.root)/sys/class/pwm/pwmchip0/pwm0 did not appear"))
        let error = #expect(throws: HomeError.self) { try rig.home.invoke("lamp", trait: "onOff", command: "on") }
        #expect(error?.code == .unavailable)
        try rig.home.invoke("porch", trait: "onOff", command: "on")

        try tree.addPWMChannel(chip: 0, channel: 0)
        rig.advance(by: 1000)
        #expect(try rig.connectivity("lamp", "onOff") == .directOnline)
        try rig.home.invoke("lamp", trait: "onOff", command: "on")
        rig.advance(by: 1000)
        #expect(pwm(tree, "duty_cycle") == "1000000")
    }
}
