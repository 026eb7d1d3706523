import HearthContract
import HearthEngine
import HearthHub
import HearthJSON
import HearthModel
import HearthSimulator
import HearthSync

/// A small real home for the targets that run input against the engine: a relay light and a dimmable lamp (both
/// with an actuator that can be told to refuse, as failing hardware does), a two-type climate sensor, a wall switch,
/// and a plug with a humidity sensor mirrored from peer hub `b`. Built fresh for every input, on a manual clock,
/// so an input's outcome never depends on the inputs before it (libFuzzer needs that to reproduce a finding).
enum HomeFixture {
    /// The daemon's registry: the standard traits and the simulated board's.
    static let registry: TraitRegistry = {
        var r = TraitRegistry.standard
        for s in SimulatedHardware.traitServers { r.register(s) }
        return r
    }()

    static func configurations(relay: FlakyActuator, dimmer: FlakyActuator) -> [DeviceConfiguration] {
        [
            DeviceConfiguration(id: "porch", name: "Porch light", roomID: "outside", types: [
                DeviceTypeConfiguration(.onOffLight, actuator: relay),
            ]),
            DeviceConfiguration(id: "lamp", name: "Kitchen lamp", structureID: "home", roomID: "kitchen", types: [
                DeviceTypeConfiguration(.dimmableLight, actuator: dimmer),
            ]),
            DeviceConfiguration(id: "bath", name: "Bathroom climate", types: [
                DeviceTypeConfiguration(.humiditySensor), DeviceTypeConfiguration(.temperatureSensor),
            ]),
            DeviceConfiguration(id: "hall", name: "Hall switch", types: [
                DeviceTypeConfiguration(.genericSwitch,
                                        traits: [TraitConfiguration(.switchTrait, features: ["momentarySwitch"])]),
            ]),
            DeviceConfiguration(id: "combo", name: "Plug and peer sensor", types: [
                DeviceTypeConfiguration(.onOffPlugInUnit), DeviceTypeConfiguration(.humiditySensor, isMirrored: true),
            ]),
        ]
    }

    /// The fixture's home and its two actuators.
    static func make(saved: [String: SavedDevice] = [:], clock: ManualClock = ManualClock()) throws(FuzzFailure)
        -> (home: Home, relay: FlakyActuator, dimmer: FlakyActuator)
    {
        let relay = FlakyActuator(), dimmer = FlakyActuator()
        do throws(HomeError) {
            let home = try Home(devices: configurations(relay: relay, dimmer: dimmer), saved: saved, clock: clock,
                                registry: registry)
            return (home, relay, dimmer)
        } catch {
            throw FuzzFailure("the fixture home cannot be built: \(error)")
        }
    }

    /// Everything a client or the state file could see of a home, to compare before and after.
    struct Snapshot: Equatable {
        var devices: [HomeDevice]
        var saved: [String: SavedDevice]
        var nextDeadline: EngineInstant?
        var outputs: [EndpointOutput?]
        var driven: [EndpointOutput?]

        init(_ home: Home, _ actuators: [FlakyActuator]) {
            devices = home.list()
            saved = home.savedState()
            nextDeadline = home.nextDeadline
            outputs = devices.flatMap { d in d.types.map { try? home.output(d.id, type: $0.descriptor.name) } }
            driven = actuators.map(\.lastDriven)
        }
    }

    /// What every device of the home must satisfy after anything happened to it:
    /// - each attribute value is one its descriptor allows (type, nullability, range), so no input can leave a
    ///   value that clients, the state file or Home Assistant would misread;
    /// - each value survives value coding (engine value → JSON a client reads → engine value);
    /// - the fast document writer writes exactly `DeviceDocument.document`, and that is JSON HearthJSON reads;
    /// - the summary is JSON HearthJSON reads back.
    /// A device whose document is byte for byte the one last checked is not checked again: the checks cost far
    /// more than the input's own work, and most lines change one device.
    struct Checker {
        var writer = DocumentWriter()
        var checked: [String: [UInt8]] = [:]
        var summary: [UInt8] = []

        mutating func check(_ home: Home) throws(FuzzFailure) {
            let devices = home.list()
            for device in devices {
                let view: DeviceView
                do throws(HomeError) { view = try home.view(device.id) } catch {
                    throw FuzzFailure("no view of \(device.id)")
                }
                let fast = writer.document(view)
                if checked[device.id] == fast { continue }
                try HomeFixture.checkValues(device)
                let slow = DeviceDocument.document(device).bytes
                try require(fast == slow, "the document writer wrote \(shown(fast)), DeviceDocument \(shown(slow))")
                try requireJSON(fast, "the document of \(device.id)")
                checked[device.id] = fast
            }
            let summary = JSON.array(devices.map { DeviceDocument.summary($0) }).bytes
            if summary != self.summary {
                try requireJSON(summary, "the summary")
                self.summary = summary
            }
        }
    }

    static func checkValues(_ device: HomeDevice) throws(FuzzFailure) {
        for type in device.types {
            for trait in type.traits {
                for reading in trait.attributes {
                    guard let value = reading.value else { continue }
                    let a = reading.descriptor
                    let at = "\(device.id) \(type.descriptor.name) \(trait.descriptor.id.qualifiedName).\(a.name)"
                    do throws(HomeError) {
                        try a.type.check(value, nullable: a.isNullable, constraint: a.constraint, what: a.name)
                    } catch {
                        throw FuzzFailure("\(at) holds \(value), which its descriptor refuses: \(error.message)")
                    }
                    let json = ValueCoding.json(value, as: a.type)
                    let back: Value?
                    do throws(HomeError) { back = try ValueCoding.value(json, as: a.type, what: a.name) } catch {
                        back = nil
                    }
                    try require(
                        back == value,
                        "\(at): \(value) is published as \(json.text), read back as "
                            + "\(back.map { "\($0)" } ?? "an error")")
                }
            }
        }
    }

    /// Fails unless `bytes` is JSON that HearthJSON reads back and writes out unchanged.
    @discardableResult
    static func requireJSON(_ bytes: [UInt8], _ what: String) throws(FuzzFailure) -> JSON {
        let json: JSON
        do throws(JSONParseError) { json = try JSON.parse(bytes) } catch {
            throw FuzzFailure("\(what) is not JSON (\(error)): \(shown(bytes))")
        }
        try require(json.bytes == bytes, "\(what) is not written back unchanged: \(shown(bytes))")
        return json
    }
}

/// An actuator that records what it drove and refuses while `failing` is set, as a relay whose line another
/// process took refuses: the engine must then keep nothing of the command.
final class FlakyActuator: EndpointActuator, Sendable {
    private struct State {
        var failing = false
        var last: EndpointOutput?
    }

    private let state = Locked(State())

    var failing: Bool {
        get { state.withLock { $0.failing } }
        set { state.withLock { $0.failing = newValue } }
    }

    var lastDriven: EndpointOutput? { state.withLock { $0.last } }

    func drive(_ output: EndpointOutput) throws(HomeError) {
        try state.withLock { s throws(HomeError) in
            if s.failing { throw .unavailable("the fuzzer's actuator refuses") }
            s.last = output
        }
    }
}
