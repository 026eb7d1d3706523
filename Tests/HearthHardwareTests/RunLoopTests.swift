import HearthEngine
@testable import HearthHardware
import HearthSimulator
import HearthModel
import Testing

@Suite("Binding run loops", .timeLimit(.minutes(1)))
struct RunLoopTests {
    @Test func aSensorPollsOnTheInjectedClock() async throws {
        let rig = try Rig()
        let sensor = try #require(try rig.add("bath", .humiditySensor,
                                              binding: "{kind: humiditySensor, sensor: humidity-1, interval: 30s}"))
        rig.simulation.setReading(sensor: "humidity-1", .humidity, milli: 40_000)
        try rig.start()
        let events = rig.home.events()
        let loop = Task { await sensor.run() }
        rig.simulation.setReading(sensor: "humidity-1", .humidity, milli: 41_000)
        rig.clock.advance(by: 30_000)
        var seen: Value?
        for await event in events {
            if case .attribute(_, _, "measuredValue", let value) = event.change { seen = value; break }
        }
        #expect(seen == .int(4100))
        loop.cancel()
        await loop.value
    }

    @Test func aWallSwitchLoopDebouncesOnTheInjectedClock() async throws {
        let rig = try Rig()
        try rig.add("porch", .onOffLight, binding: "{kind: relay, pin: relay-1}")
        let sw = try #require(
            try rig.add("hall", .genericSwitch, binding: "{kind: wallSwitch, pin: button-1, controls: porch}"))
        try rig.start()
        let events = rig.home.events()
        let loop = Task { await sw.run() }
        try rig.home.invoke("hall", trait: "dev.hearth.simulatedSwitch", command: "bounce")
        rig.clock.advance(by: 20)
        for await event in events {
            if event.deviceID == "porch", case .attribute(_, _, "onOff", .bool(true)) = event.change { break }
        }
        #expect(try rig.isOn("porch"))
        sw.stop()
        loop.cancel()
        await loop.value
    }
}
