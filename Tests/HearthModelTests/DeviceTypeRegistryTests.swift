import HearthModel
import Testing

/// The device types are one list: the standard one has nothing wrong with it, the catalogue is it, and a list with a
/// type registered twice or inconsistently says what is wrong.
@Suite struct DeviceTypeRegistryTests {
    @Test func theStandardListHasNoProblemsAndIsTheCatalogue() {
        let registry = DeviceTypeRegistry.standard
        #expect(registry.problems.isEmpty, "\(registry.problems)")
        #expect(DeviceTypeDescriptor.catalogue == registry.types)
        for type in registry.types {
            #expect(registry.named(type.name) == type)
            #expect(DeviceTypeDescriptor.named(type.name) == type)
        }
        #expect(registry.named("Toaster") == nil)
        #expect(registry.named("dimmableLight") == nil)
    }

    @Test func aTypeRegisteredTwiceOrInconsistentlyIsNamed() {
        var renamed = DeviceTypeDescriptor.fan
        renamed.name = "ceiling fan"
        let odd = DeviceTypeDescriptor(
            name: "Odd", id: 0x7FFF, category: .hvac, required: [.identify, .fanControl], optional: [.fanControl],
            features: [.onOff: ["lighting"]])
        let registry = DeviceTypeRegistry([.fan, .onOffLight, .fan, renamed, odd])
        #expect(registry.problems == [
            "two device types are named Fan",
            "Fan's id 43 is another type's too",
            "ceiling fan's id 43 is another type's too",
            "ceiling fan is not an UpperCamelCase ASCII name",
            "Odd lists fanControl as both required and optional",
            "Odd requires features of onOff, which it does not list",
        ])
        // The first of two with one name is the one found.
        #expect(registry.named("Fan") == .fan)
    }

    @Test func everyTypeIsInACategory() {
        let categories = Set(DeviceTypeRegistry.standard.types.map(\.category))
        #expect(categories.isSubset(of: DeviceCategory.allCases))
        #expect(DeviceTypeDescriptor.dimmableLight.category == .lighting)
        #expect(DeviceTypeDescriptor.onOffPlugInUnit.category == .smartPlugsAndActuators)
    }
}
