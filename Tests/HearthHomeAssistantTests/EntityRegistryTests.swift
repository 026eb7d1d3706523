import HearthEngine
@testable import HearthHomeAssistant
import HearthModel
import Testing

/// Home Assistant's entities are one list of kinds, each made from a trait: every trait the engine runs makes an
/// entity or says why it makes none, and every registered device type has a main entity.
@Suite struct EntityRegistryTests {
    @Test func everyStandardTraitMakesAnEntityOrSaysWhyNot() {
        #expect(EntityRegistry.standard.problems(for: .standard) == [])
        for (_, reason) in EntityRegistry.standard.traitsWithoutEntity { #expect(!reason.isEmpty) }
    }

    /// A trait left out of both lists, or put in both, is named.
    @Test func anIncompleteRegistrationIsNamed() {
        let standard = EntityRegistry.standard
        var without = standard.traitsWithoutEntity
        without[.identify] = "identify is a button"
        let incomplete = EntityRegistry(
            kinds: standard.kinds.filter { $0.trait != .occupancySensing }, traitsWithoutEntity: without)
        #expect(incomplete.problems(for: .standard) == [
            "identify makes an entity and is listed as making none",
            "occupancySensing makes no Home Assistant entity and says not why",
        ])
        #expect(standard.problems(for: TraitRegistry([OnOffServer.self])).first
                == "basicInformation is listed but the engine runs no such trait")
    }

    @Test(arguments: DeviceTypeRegistry.standard.types)
    func everyDeviceTypeHasAMainEntity(type: DeviceTypeDescriptor) throws {
        let traits = type == .genericSwitch ? [TraitConfiguration(.switchTrait, features: ["latchingSwitch"])]
            : type == .occupancySensor ? [TraitConfiguration(.occupancySensing, features: ["passiveInfrared"])] : []
        let home = try Home(devices: [
            DeviceConfiguration(id: "d", name: "D", types: [DeviceTypeConfiguration(type, traits: traits)]),
        ], clock: ManualClock())
        let discovery = HomeAssistantDiscovery(options: options)
        let mapping = EntityMapping(discovery: discovery, device: try home.view("d"), typeIndex: 0)
        #expect(
            EntityRegistry.standard.kinds.contains { mapping.has($0.trait) && $0.role(mapping) != nil },
            "\(type.name) has no entity kind that can be its main entity")
        let keys = mapping.components().map(\.0)
        #expect(!keys.isEmpty)
        #expect(Set(keys).count == keys.count, "\(type.name)'s components share a key: \(keys)")
        #expect(discovery.hasConfig(try home.view("d")))
    }

    /// OnOff is a light on a lighting type and a switch on any other, by the type's category.
    @Test func onOffIsALightOnlyOnALightingType() throws {
        let home = try Home(devices: [
            DeviceConfiguration(id: "lamp", name: "Lamp", types: [DeviceTypeConfiguration(.onOffLight)]),
            DeviceConfiguration(id: "pump", name: "Pump", types: [DeviceTypeConfiguration(.onOffPlugInUnit)]),
        ], clock: ManualClock())
        let discovery = HomeAssistantDiscovery(options: options)
        let lamp = EntityMapping(discovery: discovery, device: try home.view("lamp"), typeIndex: 0)
        let pump = EntityMapping(discovery: discovery, device: try home.view("pump"), typeIndex: 0)
        #expect(lamp.isLight && lamp.mainRole == "Light")
        #expect(lamp.components().map(\.0) == ["on_off_light-light", "on_off_light-identify"])
        #expect(!pump.isLight && pump.mainRole == "Switch")
        #expect(pump.components().map(\.0) == ["on_off_plug_in_unit-switch", "on_off_plug_in_unit-identify"])
    }
}
