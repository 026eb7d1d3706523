import HearthEngine
import HearthModel
import Testing

/// Invariants every device type and trait must keep; a new one is checked by being listed.
@Suite struct CatalogueTests {
    @Test func deviceTypesHaveUniqueNamesAndIdsAndRegisteredTraits() {
        let types = DeviceTypeDescriptor.catalogue
        #expect(Set(types.map(\.name)).count == types.count)
        #expect(Set(types.map(\.id)).count == types.count)
        for type in types {
            for trait in type.requiredTraits + type.optionalTraits {
                #expect(TraitRegistry.standard.server(for: trait) != nil, "\(type.name) needs \(trait)")
            }
            #expect(type.name.first?.isUppercase == true)
            #expect(DeviceTypeDescriptor.named(type.name) == type)
        }
    }

    @Test(arguments: DeviceTypeDescriptor.catalogue)
    func everyDeviceTypeBuildsWithDefaultsAndHasOnePrimaryType(type: DeviceTypeDescriptor) throws {
        var traits: [TraitConfiguration] = []
        if type == .genericSwitch { traits = [TraitConfiguration(.switchTrait, features: ["latchingSwitch"])] }
        if type == .occupancySensor { traits = [TraitConfiguration(.occupancySensing, features: ["passiveInfrared"])] }
        let home = try Home(devices: [DeviceConfiguration(id: "d", name: "D", types: [
            DeviceTypeConfiguration(type, traits: traits),
        ])], clock: ManualClock())
        let device = try home.device("d")
        #expect(device.types.filter(\.metadata.isPrimaryType).count == 1)
        for required in type.requiredTraits { #expect(device.trait(required) != nil) }
    }

    @Test func traitDescriptorsAreConsistent() {
        var clusterIDs: Set<UInt32> = []
        for (id, server) in TraitRegistry.standard.servers {
            let d = server.descriptor
            #expect(d.id == id)
            #expect(clusterIDs.insert(d.clusterID).inserted, "cluster \(d.clusterID) twice")
            #expect(Set(d.attributes.map(\.id)).count == d.attributes.count, "\(id) attribute ids")
            #expect(Set(d.attributes.map(\.name)).count == d.attributes.count, "\(id) attribute names")
            #expect(Set(d.commands.map(\.id)).count == d.commands.count, "\(id) command ids")
            #expect(Set(d.commands.map(\.name)).count == d.commands.count, "\(id) command names")
            for a in d.attributes {
                #expect(a.name.first?.isLowercase == true, "\(id).\(a.name)")
                // Quiet reporting is for attributes the engine changes on its own schedule.
                if a.hasQuietReporting { #expect(!a.isWritable) }
            }
            for c in d.commands {
                #expect(Set(c.fields.map(\.name)).count == c.fields.count, "\(id).\(c.name)")
            }
        }
    }

    @Test func everyTraitSupportsItsOwnWritableAttributesWithItsDefaultFeatures() throws {
        for type in DeviceTypeDescriptor.catalogue {
            var traits: [TraitConfiguration] = []
            if type == .genericSwitch { traits = [TraitConfiguration(.switchTrait, features: ["momentarySwitch"])] }
            if type == .occupancySensor { traits = [TraitConfiguration(.occupancySensing, features: ["radar"])] }
            let home = try Home(devices: [DeviceConfiguration(id: "d", name: "D", types: [
                DeviceTypeConfiguration(type, traits: traits),
            ])], clock: ManualClock())
            for trait in try home.device("d").types[0].traits {
                for reading in trait.attributes where reading.isSupported {
                    // A supported attribute reads as a value of its own type.
                    let a = reading.descriptor
                    #expect(homeError {
                        try a.type.check(reading.value!, nullable: a.isNullable, constraint: nil, what: a.name)
                    } == nil, "\(type.name).\(trait.descriptor.id).\(a.name) = \(reading.value!)")
                }
            }
        }
    }
}
