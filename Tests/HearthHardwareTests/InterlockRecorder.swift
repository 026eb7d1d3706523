import HearthEngine
@testable import HearthHardware
@testable import HearthSimulator
import HearthModel
import HearthSync

/// A backend over the simulated board that notes every output write (request, set, release), in order, with the
/// clock's time, and checks after each one that no two lines of an interlocked group are on together: a fan's speed
/// taps, a cover's up and down relays. A line is "on" from a write of true until a write of false or its release.
final class InterlockRecorder: InputTraitsBackend {
    struct Write: Sendable, Hashable, CustomStringConvertible {
        var pin: String
        var value: Bool
        var at: Int64
        var description: String { "\(pin)=\(value ? 1 : 0)@\(at)" }
    }

    let sim: SimulatedHardware
    let clock: ManualClock
    /// Board pin names that must never be on together.
    let group: Set<String>
    private let state = Locked<(writes: [Write], on: Set<String>, violations: [String])>(([], [], []))

    init(sim: SimulatedHardware, clock: ManualClock, group: Set<String>) {
        self.sim = sim
        self.clock = clock
        self.group = group
    }

    var writes: [Write] { state.withLock { $0.writes } }
    var violations: [String] { state.withLock { $0.violations } }
    var on: Set<String> { state.withLock { $0.on } }

    /// The writes of one pin, values only.
    func values(_ pin: String) -> [Bool] { writes.filter { $0.pin == pin }.map(\.value) }

    func note(_ pin: String, _ value: Bool) {
        state.withLock { s in
            s.writes.append(Write(pin: pin, value: value, at: clock.now.milliseconds))
            if value { s.on.insert(pin) } else { s.on.remove(pin) }
            let both = s.on.intersection(group)
            if both.count > 1 {
                s.violations.append("\(both.sorted().joined(separator: " and ")) on together after "
                                    + s.writes.map(\.description).joined(separator: " "))
            }
        }
    }

    /// The writes since the `count`th, in order (for one step's checks).
    func writes(since count: Int) -> [Write] { Array(writes.dropFirst(count)) }

    func openOutput(_ pin: PinAddress, initialValue: Bool, activeLow: Bool, drive: OutputDrive)
        throws(HardwareError) -> any OutputLine
    {
        let line = try sim.openOutput(pin, initialValue: initialValue, activeLow: activeLow, drive: drive)
        note(pin.name, initialValue)
        return RecordedLine(line: line, pin: pin.name, recorder: self)
    }
    func openInput(_ pin: PinAddress, bias: InputBias, activeLow: Bool, clock: any EngineClock)
        throws(HardwareError) -> any InputLine
    {
        try sim.openInput(pin, bias: bias, activeLow: activeLow, clock: clock)
    }
    func openPWM(_ pwm: PWMAddress) throws(HardwareError) -> any PWMOutput { try sim.openPWM(pwm) }
    func openSensor(_ sensor: SensorAddress, quantity: SensorQuantity) throws(HardwareError) -> any SensorSource {
        try sim.openSensor(sensor, quantity: quantity)
    }
    func openPowerMeter(_ meter: SensorAddress, shuntMicroohms: Int?) throws(HardwareError) -> any PowerMeterSource {
        try sim.openPowerMeter(meter, shuntMicroohms: shuntMicroohms)
    }
    func traits(forInput pin: PinAddress) -> [TraitConfiguration] { sim.traits(forInput: pin) }
    func traitEvent(_ event: String, of trait: TraitID, forInput pin: PinAddress) {
        sim.traitEvent(event, of: trait, forInput: pin)
    }
}

final class RecordedLine: OutputLine {
    let line: any OutputLine
    let pin: String
    let recorder: InterlockRecorder

    init(line: any OutputLine, pin: String, recorder: InterlockRecorder) {
        self.line = line
        self.pin = pin
        self.recorder = recorder
    }

    func set(_ value: Bool) throws(HardwareError) {
        try line.set(value)
        recorder.note(pin, value)
    }
    func value() throws(HardwareError) -> Bool { try line.value() }
    func release(leaving safeValue: Bool) throws(HardwareError) {
        try line.release(leaving: safeValue)
        recorder.note(pin, safeValue)
    }
}
