import HearthConfig
@testable import HearthHardware
import HearthModel
import Testing

/// The binding kinds are one list: each kind is complete, and a kind that makes nothing without a word is refused.
@Suite("Binding kind registry")
struct BindingKindRegistryTests {
    @Test func everyRegisteredKindHasASectionAndFitsADeviceTypeOfTheCatalogue() {
        let kinds = BindingKindRegistry.standard.kinds
        #expect(!kinds.isEmpty)
        #expect(Set(kinds.map(\.name)).count == kinds.count, "two kinds share a name: \(kinds.map(\.name))")
        for kind in kinds {
            let first = kind.section.keys.first
            #expect(first?.name == "kind" && first?.isRequired == true, "\(kind.name)'s section starts with 'kind'")
            if case .choice(let names)? = first?.shape {
                #expect(names == [kind.name])
            } else {
                Issue.record("\(kind.name)'s 'kind' key is not the choice of its name")
            }
            #expect(kind.section.keys.count > 1, "\(kind.name) has keys of its own")
            #expect(kind.section.help?.isEmpty == false, "\(kind.name)'s section says what it is")
            #expect(kind.section.isClosed, "\(kind.name)'s section refuses keys it does not read")
            #expect(!kind.deviceTypes.isEmpty, "\(kind.name) fits no device type")
            for type in kind.deviceTypes {
                #expect(
                    DeviceTypeDescriptor.catalogue.contains(type),
                    "\(kind.name) fits \(type.name), not in the catalogue")
            }
        }
    }

    @Test func theKindsFittingATypeAreThoseThatNameIt() {
        let registry = BindingKindRegistry.standard
        for type in DeviceTypeDescriptor.catalogue {
            #expect(registry.kinds(fitting: type.name).map(\.name)
                    == registry.kinds.filter { $0.deviceTypes.contains(type) }.map(\.name))
        }
        #expect(registry.kinds(fitting: "Toaster").isEmpty)
    }

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
            "hub.yaml:1:1: the relay binding kind made no binding and named no problem in this section; this is a "
                + "fault "
                + "in hearthd, not in the file (the OnOffLight would run without hardware)",
        ])
    }
}
