import HearthContract
import HearthEngine
import HearthHub
import HearthJSON
import HearthModel
import HearthMQTT
import Synchronization

/// Requests as a hub runs them (`docs/mqtt-api.md`, "Requests"): parsed by `HubRequest.parse`, values converted
/// by `ValueCoding`, run by `MQTTHub.execute` against a real `Home` (`HomeFixture`).
///
/// Input: one request per line, `DEVICE JSON` (`lamp {"trait":"onOff","command":"toggle"}`), and two kinds of
/// control line: `+MS` lets MS milliseconds pass (fades and timers run; at most a minute per line) and `!` makes
/// the next request's hardware refuse. The promises checked on every request:
/// - a refused request (bad JSON, bad key, unknown device, value out of range, hardware refusing) changes
///   nothing: no attribute, name, saved state, timer or hardware output, and no event is raised;
/// - an accepted one round-trips: the request itself through the JSON writer (`HubRequest.json` written and
///   parsed again is the same request), its response, and its effect through the document writer (the values an
///   `update` wrote are in the device's document as they were sent, a `setName`'s result is the document's name);
/// - whatever happened, every value is one its descriptor allows, documents are exact, and what the hub would
///   save is restored at the next start without a warning.
enum RequestTarget {
    /// Never connected: `execute` publishes nothing without a connection, and `get`'s refresh has no hardware.
    static let client: MQTTClient? = try? MQTTClient(options: MQTTConnectOptions(clientID: "hearth-fuzz"))

    static func run(_ bytes: [UInt8]) throws(FuzzFailure) {
        guard let client else { throw FuzzFailure("no MQTT client could be made") }
        let clock = ManualClock()
        let (home, relay, dimmer) = try HomeFixture.make(clock: clock)
        let actuators = [relay, dimmer]
        let hub = MQTTHub(home: home, client: client, topics: TopicScheme(hub: "fuzz"))
        let events = EventCounter()
        let observer = home.observe { events.add($0.count) }
        defer { home.removeObserver(observer) }
        var checker = HomeFixture.Checker()
        var failNext = false
        var lastRestored = home.savedState()

        for line in lines(bytes) {
            if line.first == UInt8(ascii: "!") { failNext = true; continue }
            if line.first == UInt8(ascii: "+") {
                let ms = Int64(String(decoding: line.dropFirst(), as: UTF8.self)) ?? 0
                clock.advance(by: min(max(ms, 0), 60_000))
                home.advance(to: clock.now)
                home.drainLanes()
                try checker.check(home)
                continue
            }
            let (device, payload) = word(line)
            for a in actuators { a.failing = failNext }
            defer { for a in actuators { a.failing = false } }
            failNext = false

            let before = HomeFixture.Snapshot(home, actuators)
            let eventsBefore = events.count
            let (transaction, parsed) = HubRequest.parse(payload)
            try require(
                isTransaction(transaction), "transaction \(transaction.text) is neither null, a string nor a number")
            switch parsed {
            case .failure(let error):
                try require(
                    transaction == .null || payload.count <= HubRequest.maximumSize,
                    "transaction of an oversized request")
                try respond(HubResponse.failure(transaction: transaction, device: device, error))
            case .success(let request):
                try require(request.transaction == transaction, "the request's transaction is not the one returned")
                try checkRoundTrip(request, payload)
                let result: Result<JSON?, HomeError>
                do throws(HomeError) { result = .success(try hub.execute(request.action, on: device)) } catch {
                    result = .failure(error)
                }
                home.drainLanes()
                switch result {
                case .failure(let error):
                    try respond(HubResponse.failure(transaction: transaction, device: device, error))
                    let after = HomeFixture.Snapshot(home, actuators)
                    try require(after == before, "the refused request \(shown(payload)) (\(error)) changed the home: "
                                + difference(before, after))
                    try require(events.count == eventsBefore, "the refused request \(shown(payload)) raised events")
                case .success(let answer):
                    try respond(HubResponse.ok(transaction: transaction, device: device, result: answer))
                    try checkEffect(request.action, answer: answer, on: device, home: home)
                    let saved = home.savedState()
                    if saved != lastRestored {
                        try checkRestorable(saved)
                        lastRestored = saved
                    }
                }
            }
            try checker.check(home)
        }
    }

    static func isTransaction(_ t: JSON) -> Bool {
        switch t {
        case .null, .string, .int: true
        default: false
        }
    }

    /// The request as the hub keeps it (to forward it unchanged) is the request it read.
    static func checkRoundTrip(_ request: HubRequest, _ payload: [UInt8]) throws(FuzzFailure) {
        let written = request.json.bytes
        let (_, again) = HubRequest.parse(written)
        guard case .success(let reread) = again else {
            throw FuzzFailure("\(shown(payload)) was accepted, but written as \(shown(written)) it is refused")
        }
        try require(reread == request && reread.json == request.json,
                    "\(shown(payload)) written as \(shown(written)) reads as another request")
    }

    static func respond(_ response: JSON) throws(FuzzFailure) {
        try HomeFixture.requireJSON(response.bytes, "the response")
    }

    /// What an accepted request did is what the device's document now says.
    static func checkEffect(_ action: HubRequest.Action, answer: JSON?, on device: String, home: Home)
        throws(FuzzFailure)
    {
        let d: HomeDevice
        do throws(HomeError) { d = try home.device(device) } catch {
            throw FuzzFailure("accepted a request for \(device), which does not exist")
        }
        let document = DeviceDocument.document(d)
        switch action {
        case .update(let type, let trait, .object(let written)):
            let types: [JSON]
            if case .array(let t)? = document["types"] { types = t } else { types = [] }
            let candidates = types.filter {
                ($0["type"] == type.map(JSON.string) || type == nil) && $0["traits"]?[trait] != nil
            }
            try require(
                candidates.count == 1, "an update of \(trait) was accepted but \(candidates.count) types have it")
            let traitDocument = candidates[0]["traits"]?[trait]
            let descriptor = HomeFixture.registry.server(for: TraitID(qualifiedName: trait))?.descriptor
            for (name, sent) in written {
                guard let attribute = descriptor?.attribute(named: name) else {
                    throw FuzzFailure("wrote unknown \(trait).\(name)")
                }
                let published = traitDocument?["attributes"]?[name]
                let want: Value?, have: Value?
                do throws(HomeError) { want = try ValueCoding.value(sent, as: attribute.type, what: name) } catch {
                    want = nil
                }
                do throws(HomeError) {
                    have = try published.map { j throws(HomeError) in
                        try ValueCoding.value(j, as: attribute.type, what: name)
                    }
                } catch { have = nil }
                try require(
                    want != nil && want == have,
                    "wrote \(trait).\(name) = \(sent.text), the document says \(published?.text ?? "nothing")")
            }
        case .setName, .setRoom, .setStructure:
            guard case .object(let members)? = answer else { throw FuzzFailure("no result for a metadata change") }
            for (key, value) in members {
                try require(
                    document[key] == value,
                    "the result says \(key) \(value.text), the document \(document[key]?.text ?? "nothing")")
            }
        default:
            break
        }
    }

    /// What the hub would save now loads back at the next start, without a warning.
    static func checkRestorable(_ saved: [String: SavedDevice]) throws(FuzzFailure) {
        let file = StateStore.encode(saved)
        let decoded: [String: SavedDevice]
        do { decoded = try StateStore.decode(try JSON.parse(file)) } catch {
            throw FuzzFailure("the state file the hub would write does not load (\(error)): \(shown(file))")
        }
        try require(decoded == saved, "the state file \(shown(file)) loads as another state")
        let (restored, _, _) = try HomeFixture.make(saved: saved)
        try require(restored.restoreWarnings.isEmpty,
                    "restoring what the hub saved warns: \(restored.restoreWarnings.joined(separator: "; "))")
    }

    static func difference(_ a: HomeFixture.Snapshot, _ b: HomeFixture.Snapshot) -> String {
        for (x, y) in zip(a.devices, b.devices) where x != y {
            return "before \(shown(DeviceDocument.document(x).bytes)), after \(shown(DeviceDocument.document(y).bytes))"
        }
        if a.saved != b.saved { return "saved state \(a.saved) → \(b.saved)" }
        if a.nextDeadline != b.nextDeadline {
            return "next timer \(String(describing: a.nextDeadline)) → \(String(describing: b.nextDeadline))"
        }
        if a.outputs != b.outputs { return "outputs \(a.outputs) → \(b.outputs)" }
        return "hardware \(a.driven) → \(b.driven)"
    }
}

/// Counts the events a home delivers to its observers.
final class EventCounter: Sendable {
    private let value = Atomic<Int>(0)
    func add(_ n: Int) { value.add(n, ordering: .relaxed) }
    var count: Int { value.load(ordering: .relaxed) }
}
