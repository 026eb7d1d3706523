import HearthEngine
import HearthModel

/// One kind of Home Assistant entity, and the trait it is made from: a device type that has the trait has the kind's
/// entities. A new entity is one `EntityKind` (its builder beside the others in `EntityMapping`) and one line in
/// `EntityRegistry.standard`.
struct EntityKind: Sendable {
    /// The trait whose presence on a device type makes this kind's entities.
    let trait: TraitID
    /// What names the type's main entity when it is this kind's (the first kind, in registry order, the type has that
    /// gives a role); nil for a kind that is never the main entity (a meter's sensors, identify).
    let role: @Sendable (EntityMapping) -> String?
    /// Appends the kind's components (key, config) after the earlier kinds' (which `identify` reads).
    let components: @Sendable (EntityMapping, inout [(String, DiscoveryJSON)]) -> Void
}

/// The entity kinds, in the order a config lists its components and a type's main entity is chosen; and the standard
/// traits that make no entity of their own, each with why. A trait the engine runs is in exactly one of the two
/// (`EntityRegistryTests`), so a new trait is given its entity, or a reason it has none, before its tests pass.
struct EntityRegistry: Sendable {
    let kinds: [EntityKind]
    let traitsWithoutEntity: [TraitID: String]

    static let standard = EntityRegistry(
        kinds: [
            .onOff, .fanControl, .windowCovering, .relativeHumidity, .temperature, .switchEvents, .contact,
            .occupancy, .electricalPower, .electricalEnergy, .identify,
        ],
        traitsWithoutEntity: [
            .levelControl: "a light's brightness, in its light entity",
            .colorControl: "a light's colour temperature, in its light entity",
            .basicInformation: "the device's own fields in the config's `device` (maker, model, versions, serial)",
            .groups: "groups are the hub's own (group topics), not entities",
            .scenesManagement: "scenes are recalled through groups, not entities",
        ])

    /// What is wrong with the lists for the traits of `traits`, one sentence each: a trait that makes no entity and
    /// says not why, one that does both, one listed that the engine does not run.
    func problems(for traits: TraitRegistry) -> [String] {
        let made = Set(entityTraits)
        var problems: [String] = []
        for id in traits.servers.keys.sorted(by: { $0.qualifiedName < $1.qualifiedName }) {
            let excused = traitsWithoutEntity[id] != nil
            if !made.contains(id) && !excused {
                problems.append("\(id) makes no Home Assistant entity and says not why")
            }
            if made.contains(id) && excused { problems.append("\(id) makes an entity and is listed as making none") }
        }
        for id in made.union(traitsWithoutEntity.keys).sorted(by: { $0.qualifiedName < $1.qualifiedName })
        where traits.server(for: id) == nil {
            problems.append("\(id) is listed but the engine runs no such trait")
        }
        return problems
    }

    /// Every trait some kind is made from, each once.
    var entityTraits: [TraitID] {
        var traits: [TraitID] = []
        for kind in kinds where !traits.contains(kind.trait) { traits.append(kind.trait) }
        return traits
    }
}

extension EntityKind {
    /// OnOff: a `light` on a lighting type, a `switch` on any other.
    static let onOff = EntityKind(trait: .onOff, role: { $0.isLight ? "Light" : "Switch" }) { mapping, out in
        out.append(mapping.isLight ? mapping.light() : mapping.relay())
    }
    static let fanControl = EntityKind(trait: .fanControl, role: { _ in "Fan" }) { mapping, out in
        out.append(mapping.fan())
    }
    static let windowCovering = EntityKind(trait: .windowCovering, role: { _ in "Cover" }) { mapping, out in
        out.append(mapping.cover())
    }
    static let relativeHumidity = EntityKind(trait: .relativeHumidityMeasurement, role: { _ in "Humidity" }) {
        mapping, out in
        out.append(
            mapping.measurement(
                .relativeHumidityMeasurement, key: "humidity", role: "Humidity", deviceClass: "humidity", unit: "%"))
    }
    static let temperature = EntityKind(trait: .temperatureMeasurement, role: { _ in "Temperature" }) {
        mapping, out in
        out.append(mapping.measurement(.temperatureMeasurement, key: "temperature", role: "Temperature",
                                       deviceClass: "temperature", unit: "°C"))
    }
    static let switchEvents = EntityKind(trait: .switchTrait, role: { _ in "Button" }) { mapping, out in
        out.append(mapping.switchEvents())
    }
    static let contact = EntityKind(trait: .booleanState, role: { _ in "Contact" }) { mapping, out in
        out.append(mapping.contact())
    }
    static let occupancy = EntityKind(trait: .occupancySensing, role: { _ in "Occupancy" }) { mapping, out in
        out.append(mapping.occupancy())
    }
    static let electricalPower = EntityKind(trait: .electricalPowerMeasurement, role: { _ in nil }) { mapping, out in
        out.append(mapping.electrical(.electricalPowerMeasurement, "activePower", key: "power", role: "Power",
                                      deviceClass: "power", unit: "W"))
        out.append(mapping.electrical(.electricalPowerMeasurement, "voltage", key: "voltage", role: "Voltage",
                                      deviceClass: "voltage", unit: "V"))
        out.append(mapping.electrical(.electricalPowerMeasurement, "activeCurrent", key: "current", role: "Current",
                                      deviceClass: "current", unit: "A"))
    }
    static let electricalEnergy = EntityKind(trait: .electricalEnergyMeasurement, role: { _ in nil }) {
        mapping, out in
        out.append(mapping.energy())
    }
    /// Named by the type's main role when it is not the only entity of a type that is not the primary one.
    static let identify = EntityKind(trait: .identify, role: { _ in nil }) { mapping, out in
        out.append(mapping.identify(mainRole: out.isEmpty ? nil : mapping.mainRole))
    }
}
