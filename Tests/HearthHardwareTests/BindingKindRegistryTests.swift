import HearthConfig
@testable import HearthHardware
import HearthModel
import Testing

/// A kind that makes nothing without a word is refused.
@Suite("Binding kind registry")
struct BindingKindRegistryTests {
    /// A factory that returns nothing must have said why; one that did not is a problem at the binding's section, so
    /// the device never runs without its hardware unsaid.
    @Test func aKindThatMakesNothingAndNamesNoProblemIsAProblemAtItsSection() throws {
        let rig = try Rig()
        let silent = BindingKind("relay", fits: [.onOffLight], help: "A relay that is never made.",
                                 keys: BindingReader.pinKeys(what: "relay", example: "relay-1"),
                                 rules: BindingReader.pinRules) { _ in nil }
        let value = try #require(ConfigValue.parse("{kind: relay, pin: relay-1}", file: "hub.yaml",
                                                   diagnostics: rig.diagnostics))
        let context = BindingContext(deviceID: "lamp", typeName: "OnOffLight", board: rig.board, hardware: rig.hardware,
                                     pins: rig.pins, log: rig.logs.log)
        #expect(BindingKindRegistry([silent]).make(value, context: context) == nil)
        #expect(rig.diagnostics.problems.map(\.description) == [
            "hub.yaml:1:1: the relay binding kind made no binding and named no problem in this section; this is a fault "
                + "in hearthd, not in the file (the OnOffLight would run without hardware)",
        ])
    }
}
