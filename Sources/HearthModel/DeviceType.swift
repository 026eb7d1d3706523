/// A Matter device type as data: which traits it must have and which it may have.
///
/// Device types are composed from the trait catalogue rather than coded, and registered in one list
/// (`DeviceTypeRegistry.standard`), so one catalogue-wide test can check every type's invariants (unique ids,
/// required traits registered, and so on) and what clients see of a type is derived from its descriptor.
public struct DeviceTypeDescriptor: Sendable, Hashable, CustomStringConvertible {
    /// UpperCamelCase, as clients name it (`DimmableLight`).
    public var name: String
    public var id: UInt32
    /// The Matter 1.4 revision of the device type (its DeviceTypeStruct's Revision).
    public var revision: UInt16
    /// The Device Library's chapter the type is in: what a front door that has no Matter shows it as (Home
    /// Assistant's OnOff is a `light` on a lighting type and a `switch` on any other).
    public var category: DeviceCategory
    public var requiredTraits: [TraitID]
    public var optionalTraits: [TraitID]
    /// Trait features this device type requires (e.g. a light's OnOff has the Lighting feature).
    public var requiredFeatures: [TraitID: Set<String>]

    public init(name: String, id: UInt32, revision: UInt16 = 1, category: DeviceCategory, required: [TraitID],
                optional: [TraitID] = [], features: [TraitID: Set<String>] = [:]) {
        self.name = name
        self.id = id
        self.revision = revision
        self.category = category
        self.requiredTraits = required
        self.optionalTraits = optional
        self.requiredFeatures = features
    }

    /// Matter traits the type lists; a manufacturer's trait (another namespace) may extend any type.
    public func allows(_ trait: TraitID) -> Bool {
        trait.namespace != TraitID.matterNamespace || requiredTraits.contains(trait) || optionalTraits.contains(trait)
    }

    public var description: String { name }
}

/// The chapters of the Matter 1.4 Device Library that Hearth's device types are in.
public enum DeviceCategory: String, Sendable, Hashable, CaseIterable {
    /// Lights (chapter 4).
    case lighting
    /// Plug-in units and other actuators of a load that is not a light (chapter 5).
    case smartPlugsAndActuators
    /// Switches and controls that are inputs (chapter 6).
    case switchesAndControls
    /// Sensors (chapter 7).
    case sensors
    /// Closures: locks, window coverings (chapter 8).
    case closures
    /// Heating, ventilation and air conditioning: fans, thermostats (chapter 9).
    case hvac
}

extension TraitID {
    public static let onOff = TraitID.matter("onOff")
    public static let levelControl = TraitID.matter("levelControl")
    public static let relativeHumidityMeasurement = TraitID.matter("relativeHumidityMeasurement")
    public static let temperatureMeasurement = TraitID.matter("temperatureMeasurement")
    public static let switchTrait = TraitID.matter("switch")
    public static let booleanState = TraitID.matter("booleanState")
    public static let occupancySensing = TraitID.matter("occupancySensing")
    public static let colorControl = TraitID.matter("colorControl")
    public static let electricalPowerMeasurement = TraitID.matter("electricalPowerMeasurement")
    public static let electricalEnergyMeasurement = TraitID.matter("electricalEnergyMeasurement")
    public static let basicInformation = TraitID.matter("basicInformation")
    public static let identify = TraitID.matter("identify")
    public static let groups = TraitID.matter("groups")
    public static let scenesManagement = TraitID.matter("scenesManagement")
    public static let fanControl = TraitID.matter("fanControl")
    public static let windowCovering = TraitID.matter("windowCovering")
}

extension DeviceTypeDescriptor {
    /// Matter 1.4 OnOffLight (0x0100).
    public static let onOffLight = DeviceTypeDescriptor(
        name: "OnOffLight", id: 0x0100, revision: 3, category: .lighting,
        required: [.identify, .groups, .onOff, .scenesManagement], optional: [.levelControl, .basicInformation],
        features: [.onOff: ["lighting"], .levelControl: ["onOff", "lighting"]])
    /// Matter 1.4 DimmableLight (0x0101).
    public static let dimmableLight = DeviceTypeDescriptor(
        name: "DimmableLight", id: 0x0101, revision: 3, category: .lighting,
        required: [.identify, .groups, .onOff, .levelControl, .scenesManagement], optional: [.basicInformation],
        features: [.onOff: ["lighting"], .levelControl: ["onOff", "lighting"]])
    /// Matter 1.4 ColorTemperatureLight (0x010C): a DimmableLight whose white is tunable (ColorControl with the
    /// ColorTemperature feature).
    public static let colorTemperatureLight = DeviceTypeDescriptor(
        name: "ColorTemperatureLight", id: 0x010C, revision: 4, category: .lighting,
        required: [.identify, .groups, .onOff, .levelControl, .colorControl, .scenesManagement],
        optional: [.basicInformation],
        features: [.onOff: ["lighting"], .levelControl: ["onOff", "lighting"], .colorControl: ["colorTemperature"]])
    /// Matter 1.4 OnOffPlugInUnit (0x010A): a relay switching a load that is not a light (a fan, a pump).
    ///
    /// Power metering: Matter puts Electrical Power and Energy Measurement in the Electrical Sensor utility type
    /// (0x0510) on the plug's own endpoint; Hearth's types are endpoints without utility types, so the plug lists them
    /// as optional traits (docs/clusters/electrical-power-measurement.md).
    public static let onOffPlugInUnit = DeviceTypeDescriptor(
        name: "OnOffPlugInUnit", id: 0x010A, revision: 3, category: .smartPlugsAndActuators,
        required: [.identify, .groups, .onOff, .scenesManagement],
        optional: [.levelControl, .basicInformation, .electricalPowerMeasurement, .electricalEnergyMeasurement],
        features: [.levelControl: ["onOff"]])
    /// Matter 1.4 HumiditySensor (0x0307).
    public static let humiditySensor = DeviceTypeDescriptor(
        name: "HumiditySensor", id: 0x0307, revision: 2, category: .sensors,
        required: [.identify, .relativeHumidityMeasurement],
        optional: [.basicInformation])
    /// Matter 1.4 TemperatureSensor (0x0302).
    public static let temperatureSensor = DeviceTypeDescriptor(
        name: "TemperatureSensor", id: 0x0302, revision: 2, category: .sensors,
        required: [.identify, .temperatureMeasurement],
        optional: [.basicInformation])
    /// Matter 1.4 GenericSwitch (0x000F): a wall switch or button that is an input, bound to lights.
    public static let genericSwitch = DeviceTypeDescriptor(
        name: "GenericSwitch", id: 0x000F, revision: 3, category: .switchesAndControls,
        required: [.identify, .switchTrait], optional: [.basicInformation])

    /// Matter 1.4 ContactSensor (0x0015): BooleanState's StateValue is true while the contact is closed. Boolean State
    /// Configuration (optional in Matter) is not implemented by Hearth.
    public static let contactSensor = DeviceTypeDescriptor(
        name: "ContactSensor", id: 0x0015, revision: 2, category: .sensors,
        required: [.identify, .booleanState], optional: [.basicInformation])
    /// Matter 1.4 OccupancySensor (0x0107). Boolean State Configuration (optional in Matter) is not implemented by
    /// Hearth.
    public static let occupancySensor = DeviceTypeDescriptor(
        name: "OccupancySensor", id: 0x0107, revision: 4, category: .sensors,
        required: [.identify, .occupancySensing], optional: [.basicInformation])

    /// Matter 1.4 Fan (0x002B): a fan whose speed Fan Control sets (FanMode, PercentSetting, SpeedSetting).
    public static let fan = DeviceTypeDescriptor(
        name: "Fan", id: 0x002B, revision: 3, category: .hvac,
        required: [.identify, .groups, .fanControl], optional: [.basicInformation])
    /// Matter 1.4 Window Covering (0x0202): a blind, shade or shutter that Window Covering moves (Lift,
    /// position-aware).
    public static let windowCovering = DeviceTypeDescriptor(
        name: "WindowCovering", id: 0x0202, revision: 4, category: .closures,
        required: [.identify, .windowCovering], optional: [.groups, .basicInformation],
        features: [.windowCovering: ["lift", "positionAwareLift"]])

    /// Every device type Hearth knows: `DeviceTypeRegistry.standard`'s.
    public static var catalogue: [DeviceTypeDescriptor] { DeviceTypeRegistry.standard.types }

    public static func named(_ name: String) -> DeviceTypeDescriptor? { DeviceTypeRegistry.standard.named(name) }
}
