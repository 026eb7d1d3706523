// Real parts for HearthKit's tests: a private mosquitto, and real `hearthd` processes on the simulated board
// (the repository's boards/sim.yaml), each with its own configuration and state directory. The tests see them only
// through HearthKit, as an app would.
import Foundation
import HearthKit
import HearthTestKit
import Testing
#if canImport(Glibc)
import Glibc
#endif

final class HubRig: @unchecked Sendable {
    let broker: TestBroker
    let directory: String
    private(set) var hubs: [String: RunningProduct] = [:]

    /// The repository's simulated board.
    static let board = Repository.path("boards/sim.yaml")

    init() async throws {
        broker = try TestBroker()
        directory = NSTemporaryDirectory() + "hearthkit-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    deinit {
        for hub in hubs.values { hub.signal(SIGKILL) }
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Starts `hearthd` as hub `id` with these devices (YAML, indented as list items under `devices:`), without its web
    /// page: the hubs of tests run side by side, and one port 8470 for all would clash.
    func start(_ id: String, devices: String, extra: String = "") throws {
        let config = "\(directory)/\(id).yaml"
        try """
        hub:
          id: \(id)
          board: \(Self.board)
          stateDirectory: \(id)-state
        mqtt:
          host: 127.0.0.1
          port: \(broker.port)
          keepAlive: 5s
        \(extra)
        devices:
        \(devices)
        web: {enabled: false}
        """.write(toFile: config, atomically: true, encoding: .utf8)
        hubs[id] = try RunningProduct("hearthd", ["run", "--config", config], outputFile: "\(directory)/\(id).log")
    }

    func hub(_ id: String) -> RunningProduct? { hubs[id] }

    var brokerAddress: String { "127.0.0.1:\(broker.port)" }

    /// Connects and waits until every device in `ids` is listed and online.
    func home(hub: String? = nil, timeout: Duration = .seconds(10), waitingFor ids: [String]) async throws -> Home {
        // The hub may not have published its status yet, and a hub-bound connection is refused (`notFound`) until
        // it has: try again until it is not, within `timeout`. Any other error ends the wait.
        var outcome: Result<Home, any Error> = .failure(TestFixtureError("no connection was tried"))
        _ = await poll(within: timeout, every: .milliseconds(50)) {
            do {
                outcome = .success(try await Home.connect(broker: brokerAddress, hub: hub, timeout: timeout))
            } catch let error as HomeError where error.code == .notFound {
                outcome = .failure(error)
                return false
            } catch {
                outcome = .failure(error)
            }
            return true
        }
        let connected = try outcome.get()
        _ = try await first(connected.devices().batched()) { devices in
            ids.allSatisfy { id in
                devices.contains { $0.id == id && $0.sourceConnectivity.connectivityState == .online }
            }
        }
        return connected
    }

    func log(_ id: String) -> String { hubs[id]?.output ?? "" }

    /// Waits until every thread of a hub sent SIGSTOP is stopped (state `T` in /proc/PID/task/*/stat).
    func waitUntilStopped(_ id: String) async throws {
        let pid = try #require(hubs[id]?.pid)
        let stopped = await poll(within: .seconds(10), every: .milliseconds(2)) {
            let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
            let states = tasks.map { task in
                // The state follows the command name in parentheses: "1234 (hearthd) T …".
                let stat = (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/stat", encoding: .utf8)) ?? ""
                return stat.split(separator: ")").last?.split(separator: " ").first.map(String.init) ?? "?"
            }
            return !states.isEmpty && states.allSatisfy { $0 == "T" }
        }
        try #require(stopped, "hub \(id) did not stop within 10 s of SIGSTOP")
    }
}

/// The first element of `sequence` that satisfies `predicate` (the test's time limit bounds the wait).
func first<S: AsyncSequence>(_ sequence: S, where predicate: (S.Element) -> Bool) async throws -> S.Element {
    for try await element in sequence where predicate(element) { return element }
    throw TestFixtureError("the sequence ended before the condition held")
}

/// Waits until the device, as the home sees it now and after every change, satisfies `predicate`.
@discardableResult
func device(_ home: Home, _ id: String, where predicate: (HomeDevice) -> Bool) async throws -> HomeDevice {
    try await first(home.device(id: id), where: predicate)
}

/// The devices of the sample home (as in examples/sim.yaml, plus an Off-only fan).
let sampleDevices = """
  - id: porch-light
    name: Porch light
    room: outside
    type: OnOffLight
    traits:
      onOff: {startUpOnOff: null}
    binding: {kind: relay, pin: relay-1}
  - id: kitchen-lamp
    name: Kitchen lamp
    room: kitchen
    info: {vendorName: Hearth, productName: Simulated dimmer}
    type: DimmableLight
    traits:
      levelControl: {onOffTransitionTime: 5}
    binding: {kind: pwmDimmer, pwm: dimmer-1, relay: dimmer-relay, gamma: 2.2}
  - id: bathroom-climate
    name: Bathroom climate
    room: bathroom
    types:
      - type: HumiditySensor
        binding: {kind: humiditySensor, sensor: humidity-1, interval: 5s}
      - type: TemperatureSensor
        binding: {kind: temperatureSensor, sensor: humidity-1, interval: 5s}
  - id: hall-switch
    name: Hall switch
    room: hall
    type: GenericSwitch
    binding: {kind: wallSwitch, pin: wall-switch-1, mode: momentary, controls: kitchen-lamp}
  - id: fan
    name: Bathroom fan
    type: OnOffPlugInUnit
    traits:
      onOff: {features: [offOnly]}
    binding: {kind: relay, pin: relay-2}
"""

let sampleIDs = ["porch-light", "kitchen-lamp", "bathroom-climate", "hall-switch", "fan"]

extension HomeError {
    /// The error `body` throws, or nil.
    static func from(_ body: () async throws -> Void) async -> HomeError? {
        do {
            try await body()
            return nil
        } catch let error as HomeError {
            return error
        } catch {
            Issue.record("not a HomeError: \(error)")
            return nil
        }
    }
}
