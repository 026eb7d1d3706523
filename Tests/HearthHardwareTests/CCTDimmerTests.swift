import HearthConfig
import HearthEngine
@testable import HearthHardware
import HearthHardwareLinux
import HearthLinux
@testable import HearthSimulator
import HearthModel
import HearthTestKit
import Testing

/// The tunable-white binding on a sysfs-shaped PWM tree: the simulated board names cct-warm (pwmchip0 channel 2) and
/// cct-cold (channel 3); its relay runs on the simulated GPIO.
@Suite("CCT dimmer binding")
struct CCTDimmerTests {
    func tree() throws -> SysfsTree {
        let tree = try SysfsTree()
        try tree.addPWMChip(0, channels: 4)
        try tree.addPWMChannel(chip: 0, channel: 2)
        try tree.addPWMChannel(chip: 0, channel: 3)
        return tree
    }

    func read(_ tree: SysfsTree, channel: Int, _ attribute: String) -> String? {
        tree.contents(of: "/sys/class/pwm/pwmchip0/pwm\(channel)/\(attribute)").map {
            String($0.filter { !$0.isNewline })
        }
    }

    /// Both duty cycles as the sysfs files hold them: (warm, cold).
    func duties(_ tree: SysfsTree) throws -> (warm: UInt64, cold: UInt64) {
        (try #require(read(tree, channel: 2, "duty_cycle").flatMap { UInt64($0) }),
         try #require(read(tree, channel: 3, "duty_cycle").flatMap { UInt64($0) }))
    }

    /// A lit strip at full level: 1000 Hz (a period of 1 000 000 ns), gamma 1 so the level is the total duty.
    func litStrip(_ tree: SysfsTree, _ keys: String = "coldMireds: 150, warmMireds: 350, gamma: 1") throws
        -> (Rig, CCTDimmerBinding)
    {
        let rig = try Rig(sysfs: tree)
        let strip = try #require(try rig.add(
            "strip", .colorTemperatureLight,
            binding: "{kind: cctDimmer, warm: cct-warm, cold: cct-cold, relay: cct-relay, \(keys)}",
            traits: [TraitConfiguration(.onOff, attributes: ["startUpOnOff": .int(1)]),
                     TraitConfiguration(.levelControl, attributes: ["startUpCurrentLevel": .int(254)])])
            as? CCTDimmerBinding)
        try rig.start()
        return (rig, strip)
    }

    func moveTo(_ rig: Rig, mireds: Int, tenths: Int = 0) throws {
        try rig.home.invoke("strip", trait: "colorControl", command: "moveToColorTemperature",
                            arguments: ["colorTemperatureMireds": .int(mireds), "transitionTime": .int(tenths)])
    }

    @Test func theWarmShareIsLinearInMireds() {
        #expect(CCTDimmerBinding.warmShare(mireds: 153, cold: 153, warm: 370) == 0)
        #expect(CCTDimmerBinding.warmShare(mireds: 370, cold: 153, warm: 370) == 1)
        #expect(CCTDimmerBinding.warmShare(mireds: 250, cold: 150, warm: 350) == 0.5)
        #expect(CCTDimmerBinding.warmShare(mireds: 100, cold: 150, warm: 350) == 0)
        #expect(CCTDimmerBinding.warmShare(mireds: 500, cold: 150, warm: 350) == 1)
        #expect(CCTDimmerBinding.warmShare(mireds: nil, cold: 150, warm: 350) == 0.5)
    }

    @Test func dutyCyclesAtPointsOfTheCurve() throws {
        let tree = try tree()
        let (rig, _) = try litStrip(tree)
        #expect(read(tree, channel: 2, "period") == "1000000")
        #expect(read(tree, channel: 3, "period") == "1000000")
        #expect(read(tree, channel: 2, "enable") == "1")
        // Full level at 250 mireds, the middle of 150…350: half and half.
        #expect(try duties(tree) == (500_000, 500_000))
        try moveTo(rig, mireds: 150)
        #expect(try duties(tree) == (0, 1_000_000))
        try moveTo(rig, mireds: 350)
        #expect(try duties(tree) == (1_000_000, 0))
        try moveTo(rig, mireds: 200)
        #expect(try duties(tree) == (250_000, 750_000))
        // Half the level (127/254 with gamma 1): half the total, split the same way.
        try rig.home.invoke("strip", trait: "levelControl", command: "moveToLevel", arguments: ["level": .int(127)])
        #expect(try duties(tree) == (125_000, 375_000))
        #expect(rig.simulation.output(try key(rig, "cct-relay"))?.value == true)
        // Off: both dark, the relay open.
        try rig.home.invoke("strip", trait: "onOff", command: "off")
        #expect(try duties(tree) == (0, 0))
        #expect(rig.simulation.output(try key(rig, "cct-relay"))?.value == false)
    }

    @Test func theBrightnessStaysConstantWhileTheTemperatureMoves() throws {
        let tree = try tree()
        let (rig, strip) = try litStrip(tree, "coldMireds: 153, warmMireds: 370, gamma: 2.2")
        try rig.home.invoke("strip", trait: "levelControl", command: "moveToLevel", arguments: ["level": .int(180)])
        let total = try duties(tree).warm + duties(tree).cold
        #expect(total == strip.duty(for: EndpointOutput(onOff: true, level: 180)).warm
                + strip.duty(for: EndpointOutput(onOff: true, level: 180)).cold)
        try moveTo(rig, mireds: 153)
        try moveTo(rig, mireds: 370, tenths: 20)
        var warmSeen: [UInt64] = []
        for _ in 0..<100 {
            rig.advance(by: 20)
            let d = try duties(tree)
            #expect(d.warm + d.cold == total, "at \(rig.clock.now)")
            warmSeen.append(d.warm)
        }
        // The warm share rose step by step from all cold to all warm.
        #expect(zip(warmSeen, warmSeen.dropFirst()).allSatisfy { $0 <= $1 })
        #expect(try duties(tree) == (total, 0))
        #expect(try rig.value("strip", "colorControl", "colorTemperatureMireds") == .int(370))
    }

    @Test func theBindingSetsThePhysicalRange() throws {
        let tree = try tree()
        let (rig, strip) = try litStrip(tree, "coldMireds: 160, warmMireds: 400")
        #expect(try rig.value("strip", "colorControl", "colorTempPhysicalMinMireds") == .int(160))
        #expect(try rig.value("strip", "colorControl", "colorTempPhysicalMaxMireds") == .int(400))
        #expect(try rig.value("strip", "colorControl", "coupleColorTempToLevelMinMireds") == .int(160))
        try moveTo(rig, mireds: 1000)
        #expect(try rig.value("strip", "colorControl", "colorTemperatureMireds") == .int(400))
        #expect(try duties(tree).cold == 0)
        #expect(strip.wiring == "warm white PWM cct-warm (pwmchip0/pwm2), cold white PWM cct-cold (pwmchip0/pwm3) "
                + "at 1000 Hz, 160…400 mireds, power relay cct-relay (line 5 of hearth-sim)")
    }

    @Test func theRelayNeverSwitchesWhileAChannelIsLitAndStopReleasesBoth() throws {
        let rig = try Rig()
        let strip = try #require(
            try rig.add(
                "strip", .colorTemperatureLight,
                binding: "{kind: cctDimmer, warm: cct-warm, cold: cct-cold, relay: cct-relay}",
                traits: [TraitConfiguration(.onOff, attributes: ["startUpOnOff": .int(1)])]) as? CCTDimmerBinding)
        let relay = try key(rig, "cct-relay")
        try rig.start()
        #expect(
            Array(rig.simulation.operations.prefix(3)) == [
                .pwmStart(key: "pwmchip0/pwm2", dutyCycleNanoseconds: 0),
                .pwmStart(key: "pwmchip0/pwm3", dutyCycleNanoseconds: 0),
                .output(key: relay, value: true)
            ])
        try rig.home.invoke("strip", trait: "onOff", command: "off")
        try rig.home.invoke("strip", trait: "onOff", command: "on")
        strip.stop()
        var warm: UInt64 = 0, cold: UInt64 = 0
        var violations: [String] = []
        var relayOn: Bool?
        for operation in rig.simulation.operations {
            switch operation {
            case .pwmStart("pwmchip0/pwm2", let d), .pwmDuty("pwmchip0/pwm2", let d): warm = d
            case .pwmStart("pwmchip0/pwm3", let d), .pwmDuty("pwmchip0/pwm3", let d): cold = d
            case .pwmStop("pwmchip0/pwm2"): warm = 0
            case .pwmStop("pwmchip0/pwm3"): cold = 0
            case .output(relay, let value):
                if value != relayOn, warm + cold > 0 { violations.append("relay \(value) at \(warm) + \(cold)") }
                relayOn = value
            default: break
            }
        }
        #expect(violations == [])
        #expect(rig.simulation.output(relay)?.history == [true, false, true, false])
        #expect(rig.simulation.operations.suffix(3).contains(.pwmStop(key: "pwmchip0/pwm2")))
        #expect(rig.simulation.operations.suffix(3).contains(.pwmStop(key: "pwmchip0/pwm3")))
    }

    /// Like the pwmDimmer, an idle strip has both duties written again within each probe interval, while a fade's
    /// writes count as the probe: no step is written twice.
    @Test func anIdleStripIsProbedAndAFadeIsNotWrittenTwice() throws {
        let rig = try Rig()
        try rig.add("strip", .colorTemperatureLight, binding: "{kind: cctDimmer, warm: cct-warm, cold: cct-cold}",
                    traits: [TraitConfiguration(.onOff, attributes: ["startUpOnOff": .int(1)])])
        try rig.start()
        let writes = { (channel: String) in rig.simulation.operations.compactMap { op -> UInt64? in
            if case .pwmDuty(channel, let d) = op { return d } else { return nil } } }
        let idle = (warm: writes("pwmchip0/pwm2").count, cold: writes("pwmchip0/pwm3").count)
        rig.advance(by: outputProbeInterval)
        #expect(writes("pwmchip0/pwm2").count == idle.warm + 1 && writes("pwmchip0/pwm3").count == idle.cold + 1,
                "each duty written again once within an interval")

        // 153 → 370 mireds over 12 s, more than two probe intervals.
        let before = (warm: writes("pwmchip0/pwm2").count, cold: writes("pwmchip0/pwm3").count)
        try rig.home.invoke("strip", trait: "colorControl", command: "moveToColorTemperature",
                            arguments: ["colorTemperatureMireds": .int(370), "transitionTime": .int(120)])
        for _ in 0..<(12_000 / 20) { rig.advance(by: 20) }
        for (channel, start) in [("pwmchip0/pwm2", before.warm), ("pwmchip0/pwm3", before.cold)] {
            let fade = Array(writes(channel).dropFirst(start))
            #expect(fade.count > 100)
            #expect(zip(fade, fade.dropFirst()).allSatisfy { $0 != $1 }, "\(channel): a step written twice")
        }
    }

    /// Both channels on a sysfs-shaped tree whose chip goes away with nothing commanded: the probe finds out within
    /// an interval, the strip is offline with the reason, and it comes back at the next retry once the chip does.
    @Test func aChipThatDisappearsTakesTheStripOfflineUntilItComesBack() throws {
        let tree = try tree()
        let (rig, _) = try litStrip(tree)
        let lit = try duties(tree)
        let offline = SourceConnectivity(.offline, .direct)
        tree.remove("/sys/class/pwm/pwmchip0")
        tree.remove("/sys/devices/platform/hearth-pwm.0")
        var detected: Int64 = 0
        while try rig.connectivity("strip", "colorControl") != offline, detected < 10_000 {
            rig.advance(by: 100)
            detected += 100
        }
        #expect(detected <= outputProbeInterval, "within one probe interval")
        #expect(
            rig.logs.all.contains {
                $0.hasPrefix(
                    "strip ColorTemperatureLight (cctDimmer): offline: the CCT strip's PWM channels stopped answering: "
                )
            })

        try tree.addPWMChip(0, channels: 4)
        try tree.addPWMChannel(chip: 0, channel: 2)
        try tree.addPWMChannel(chip: 0, channel: 3)
        var recovered: Int64 = 0
        while try rig.connectivity("strip", "colorControl") != .directOnline, recovered < 120_000 {
            rig.advance(by: 100)
            recovered += 100
        }
        #expect(recovered <= 60_000, "at the next retry; the backoff is capped at a minute")
        #expect(try duties(tree) == lit, "back at the duties it had")
    }

    /// The problems one binding has, read on a fresh simulated board.
    func problems(_ yaml: String) throws -> [String] {
        let rig = try Rig()
        #expect(rig.makeBinding(yaml, device: "d", type: "ColorTemperatureLight") == nil)
        return rig.diagnostics.problems.map(\.description)
    }

    @Test func badConfigurationIsReportedPrecisely() throws {
        #expect(
            try problems("{kind: cctDimmer, warm: cct-warm, cold: cct-cold, coldMireds: 370, warmMireds: 153}") == [
                "hub.yaml:1:63: coldMireds: coldMireds (370) must be below warmMireds (153): mireds are 1000000 / "
                    + "kelvins, "
                    + "so the cold white (e.g. 6500 K = 153) has fewer than the warm one (e.g. 2700 K = 370)"
            ])
        #expect(
            try problems("{kind: cctDimmer, warm: cct-warm}") == [
                "hub.yaml:1:1: missing 'cold' (the board's PWM channel, e.g. one of dimmer-1, dimmer-2, cct-warm, "
                    + "cct-cold, fan-pwm)"
            ])
        #expect(
            try problems("{kind: cctDimmer, warm: cct-warm, cold: cct-blue}") == [
                "hub.yaml:1:41: cold: the board 'sim' has no PWM channel 'cct-blue'; its PWM channels are dimmer-1, "
                    + "dimmer-2, "
                    + "cct-warm, cct-cold, fan-pwm"
            ])
        #expect(
            try problems("{kind: cctDimmer, warm: dimmer-1, cold: dimmer-1}") == [
                "hub.yaml:1:41: cold: PWM dimmer-1 (pwmchip0/pwm0) is already used by d ColorTemperatureLight at "
                    + "hub.yaml:1:25 "
                    + "(warm); each pin can drive only one binding"
            ])
        #expect(
            try problems("{kind: cctDimmer, warm: dimmer-2, cold: cct-cold, warmMireds: 0}") == [
                "hub.yaml:1:63: warmMireds: 0 is out of range; allowed: 1…65279 mireds"
            ])
        #expect(
            try problems("{kind: pwmDimmer, pwm: dimmer-2}") == [
                "hub.yaml:1:8: kind: a pwmDimmer binding does not fit a ColorTemperatureLight (it fits DimmableLight); "
                    + "for ColorTemperatureLight use kind: cctDimmer"
            ])
    }
}
