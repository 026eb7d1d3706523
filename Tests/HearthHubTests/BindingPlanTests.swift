import Foundation
import HearthConfig
import HearthEngine
@testable import HearthHardware
import HearthHub
import HearthModel
import HearthTestKit
import Testing

/// The daemon's plan never starts a device whose binding was not made: when nothing said why, the plan says so at
/// the binding, and the hub does not start.
@Suite final class BindingPlanTests {
    let directory: String
    let config: String

    init() throws {
        directory = NSTemporaryDirectory() + "hearth-binding-plan-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let board = Repository.path("boards/sim.yaml")
        config = "\(directory)/hearth.yaml"
        try """
            hub: {board: \(board)}
            devices:
              - {id: porch, type: OnOffLight, binding: {kind: relay, pin: relay-1}}

            """.write(toFile: config, atomically: false, encoding: .utf8)
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }

    /// The daemon's hardware, with bindings made by `make`.
    struct Provider: HardwareProvider {
        var make: @Sendable (ConfigValue, BindingContext) -> (any HardwareBinding)?
        func loadBoard(file: String, diagnostics: ConfigDiagnostics) -> Board? {
            BoardHardware().loadBoard(file: file, diagnostics: diagnostics)
        }
        func backend(for board: Board) -> any HardwareBackend { BoardHardware().backend(for: board) }
        func makeBinding(_ config: ConfigValue, context: BindingContext) -> (any HardwareBinding)? {
            make(config, context)
        }
        var traitServers: [any TraitServer.Type] { BoardHardware().traitServers }
    }

    func problems(_ hardware: any HardwareProvider) -> [String] {
        HubDaemon.check(configFile: config, hardware: hardware)
            .map { $0.description.replacingOccurrences(of: directory, with: "DIR") }
    }

    @Test func theFileItselfHasNoProblem() {
        #expect(problems(BoardHardware()) == [])
    }

    @Test func aRegisteredKindWhoseFactoryMakesNothingStopsThePlanAtTheBinding() {
        let silent = BindingKind("relay", fits: [.onOffLight], help: "A relay that is never made.",
                                 keys: BindingReader.pinKeys(what: "relay", example: "relay-1"),
                                 rules: BindingReader.pinRules) { _ in nil }
        let kinds = BindingKindRegistry([silent])
        #expect(
            problems(Provider { kinds.make($0, context: $1) }) == [
                "DIR/hearth.yaml:3:44: devices[0].binding: the relay binding kind made no binding and named no "
                    + "problem in this section; this is a fault in hearthd, not in the file (the OnOffLight would "
                    + "run without hardware)"
            ])
    }

    @Test func aProviderThatMakesNothingAndNamesNoProblemStopsThePlanAtTheBinding() {
        #expect(problems(Provider { _, _ in nil }) == [
            "DIR/hearth.yaml:3:44: devices[0].binding: no binding was made from this section and no problem was named; "
                + "the OnOffLight would run without hardware, so the hub does not start",
        ])
    }
}
