/// The device types Hearth knows, by name: the one list a new device type is added to.
///
/// A device type is its descriptor (`DeviceTypeDescriptor`: name, id, revision, Device Library category, traits and
/// features) and one line in `standard`. Everything else reads this list: configuration (the `type:` a device may
/// name, and the JSON Schema), the binding kinds each type accepts, Home Assistant's entities (from the type's traits
/// and category), HearthKit's generated types and the Matter bridge's endpoints. A type registered incompletely — a
/// trait no server runs, no entity in Home Assistant, no HearthKit type — fails a test of the target that lacks it.
public struct DeviceTypeRegistry: Sendable {
    /// In registration order: the order messages, the schema and HearthKit list them in.
    public let types: [DeviceTypeDescriptor]
    private let indexByName: [String: Int]

    public init(_ types: [DeviceTypeDescriptor]) {
        self.types = types
        var indexByName: [String: Int] = [:]
        // The first of two with one name wins; `problems` names the second.
        for (index, type) in types.enumerated() where indexByName[type.name] == nil { indexByName[type.name] = index }
        self.indexByName = indexByName
    }

    /// Every device type Hearth has.
    public static let standard = DeviceTypeRegistry([
        .onOffLight, .dimmableLight, .colorTemperatureLight, .onOffPlugInUnit, .humiditySensor, .temperatureSensor,
        .genericSwitch, .contactSensor, .occupancySensor, .fan, .windowCovering,
    ])

    public func named(_ name: String) -> DeviceTypeDescriptor? { indexByName[name].map { types[$0] } }

    /// What is wrong with the list, one sentence each; empty when every type can be registered as it is. Checks what
    /// the model alone can: names and ids unique, names UpperCamelCase ASCII (clients and entity ids are made from
    /// them), no trait both required and optional, features only for traits the type lists.
    public var problems: [String] {
        var problems: [String] = []
        var names: Set<String> = [], ids: Set<UInt32> = []
        for type in types {
            if !names.insert(type.name).inserted { problems.append("two device types are named \(type.name)") }
            if !ids.insert(type.id).inserted { problems.append("\(type.name)'s id \(type.id) is another type's too") }
            if !Self.isUpperCamelCaseASCII(type.name) {
                problems.append("\(type.name) is not an UpperCamelCase ASCII name")
            }
            for trait in type.requiredTraits where type.optionalTraits.contains(trait) {
                problems.append("\(type.name) lists \(trait) as both required and optional")
            }
            for trait in type.requiredFeatures.keys.sorted(by: { $0.qualifiedName < $1.qualifiedName })
            where !type.requiredTraits.contains(trait) && !type.optionalTraits.contains(trait) {
                problems.append("\(type.name) requires features of \(trait), which it does not list")
            }
        }
        return problems
    }

    static func isUpperCamelCaseASCII(_ name: String) -> Bool {
        func upper(_ c: UInt8) -> Bool { c >= UInt8(ascii: "A") && c <= UInt8(ascii: "Z") }
        func lowerOrDigit(_ c: UInt8) -> Bool {
            (c >= UInt8(ascii: "a") && c <= UInt8(ascii: "z")) || (c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9"))
        }
        return name.utf8.first.map(upper) == true && name.utf8.allSatisfy { upper($0) || lowerOrDigit($0) }
    }
}
