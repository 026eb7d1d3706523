import HearthEngine
import HearthModel

/// The Home Assistant entities of one device type: the table of `docs/home-assistant.md` as code.
///
/// State is read from the device document (`types[<index>]` of the document on `…/devices/<device>`, in
/// configuration order) with value templates; commands are Hearth requests rendered by command templates on the
/// device's `set` topic. Every entity is available only while the hub says `online` and its device type's
/// connectivity is `online` (a stale sensor shows unavailable while the hub is up).
struct EntityMapping {
    let discovery: HomeAssistantDiscovery
    let device: DeviceView
    let typeIndex: Int
    /// The device type, and its traits, read once: a config asks `has` and `type` a dozen times each, and each
    /// answer read the type and every trait's descriptor again (most of a 1,000-device hub's discovery start-up,
    /// callgrind).
    let type: DeviceTypeView
    let traits: [TraitID]
    /// The device's document and `set` topics, its object id and the type's key, written once: every entity names
    /// them, some twice.
    let documentTopic: String
    let setTopic: String
    let deviceObjectID: String
    let typeKey: String
    /// The type's OnOff is a light, not a switch (``showsOnOffAsLight(_:)``).
    let isLight: Bool

    init(discovery: HomeAssistantDiscovery, device: DeviceView, typeIndex: Int) {
        self.discovery = discovery
        self.device = device
        self.typeIndex = typeIndex
        let type = device.type(typeIndex)
        self.type = type
        traits = (0..<type.traitCount).map { type.traitDescriptor($0).id }
        documentTopic = discovery.documentTopic(device.id)
        setTopic = discovery.setTopic(device.id)
        deviceObjectID = ObjectID.device(hub: discovery.options.hub, device: device.id)
        let descriptor = type.descriptor
        typeKey = Self.typeKey(descriptor.name)
        isLight = Self.showsOnOffAsLight(descriptor.category)
    }

    /// A template of this type's (`TemplateCache`): the same for every device of the type at this place in its
    /// document. `name` must say what else it depends on (which traits the type has).
    func template(_ name: String, _ make: () -> String) -> DiscoveryJSON {
        discovery.templates.string("\(typeIndex) \(typeName) \(name)", make)
    }

    var typeName: String { type.descriptor.name }
    var options: HomeAssistantOptions { discovery.options }

    /// `dimmable_light`: the type's part of entity keys.
    static func typeKey(_ typeName: String) -> String {
        var out: [UInt8] = []
        for (i, c) in typeName.utf8.enumerated() {
            // Device type names are ASCII UpperCamelCase (`DeviceTypeDescriptor`); anything else is kept as it is.
            if c >= UInt8(ascii: "A") && c <= UInt8(ascii: "Z") {
                if i > 0 { out.append(UInt8(ascii: "_")) }
                out.append(c + 32)
            } else {
                out.append(c)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    func has(_ trait: TraitID) -> Bool { traits.contains(trait) }

    /// `value_json.types[1].traits.onOff`: where the trait is in the device document.
    func path(_ trait: TraitID) -> String {
        let name = trait.qualifiedName
        let key = trait.namespace == TraitID.matterNamespace ? ".\(name)" : "['\(name)']"
        return "value_json.types[\(typeIndex)].traits\(key)"
    }

    func attribute(_ trait: TraitID, _ name: String) -> String { "\(path(trait)).attributes.\(name)" }

    /// A request as a command template writes it: `{"type":"DimmableLight","trait":"onOff","command":"on"}`.
    func request(_ trait: TraitID, _ command: String, args: String? = nil) -> String {
        var s = #"{"type":"\#(typeName)","trait":"\#(trait.qualifiedName)","command":"\#(command)""#
        if let args { s += #","args":\#(args)"# }
        return s + "}"
    }

    // MARK: Components

    /// The traits that make an entity (``components()``), each alone: a type with none of them has no entity. Which
    /// devices have a config is asked while retained configs are read (`HomeAssistantDiscovery.hasConfig`), and
    /// writing every config to know it was a whole announcement's work.
    static let entityTraits: [TraitID] = EntityRegistry.standard.entityTraits

    /// The components of every entity kind (`EntityRegistry.standard`) whose trait the type has, in the registry's
    /// order.
    func components() -> [(String, DiscoveryJSON)] {
        var out: [(String, DiscoveryJSON)] = []
        for kind in EntityRegistry.standard.kinds where has(kind.trait) { kind.components(self, &out) }
        return out
    }

    /// Whether a type of `category` shows its OnOff as a light (Home Assistant's `light`) or a load (`switch`): a new
    /// Device Library category must say which.
    static func showsOnOffAsLight(_ category: DeviceCategory) -> Bool {
        switch category {
        case .lighting: true
        case .smartPlugsAndActuators, .switchesAndControls, .sensors, .closures, .hvac: false
        }
    }

    /// The role of the type's main entity, naming it when the type is not the device's primary one: the first entity
    /// kind's with a role, or the type's name.
    var mainRole: String {
        for kind in EntityRegistry.standard.kinds where has(kind.trait) {
            if let role = kind.role(self) { return role }
        }
        return typeName
    }

    /// Home Assistant's naming rules: the entity of the primary type's main feature has no name of its own (it
    /// shows as the device's name); every other entity is named by its role.
    func name(_ role: String) -> DiscoveryJSON { type.isPrimaryType && role == mainRole ? .null : .string(role) }

    func base(platform: String, key: String, role: String) -> [(String, DiscoveryJSON)] {
        [
            ("platform", .string(platform)),
            // ObjectID.entity's id, from the parts already encoded.
            ("unique_id", .string(deviceObjectID + "__" + typeKey + "-" + key)),
            ("name", name(role)),
        ]
    }

    var availability: [(String, DiscoveryJSON)] { availability(of: nil) }

    /// Available while the hub is online and, for `trait`, that trait is (a plug's meter can fail while its relay
    /// works: the switch stays usable and only the meter's sensors show unavailable); without one, while the type is.
    func availability(of trait: TraitID?) -> [(String, DiscoveryJSON)] {
        [
            ("availability", .array([
                .object([("topic", .string(discovery.statusTopic))]),
                .object([
                    ("topic", .string(documentTopic)),
                    ("value_template", template("availability \(trait?.qualifiedName ?? "")") {
                        let where_ = trait.map { "\(path($0)).sourceConnectivity" }
                            ?? "value_json.types[\(typeIndex)].sourceConnectivity"
                        return "{{ 'online' if \(where_).connectivityState == 'online' else 'offline' }}"
                    }),
                ]),
            ])),
            ("availability_mode", .string("all")),
        ]
    }

    var stateTopic: (String, DiscoveryJSON) { ("state_topic", .string(documentTopic)) }
    var commandTopic: (String, DiscoveryJSON) { ("command_topic", .string(setTopic)) }

    /// An attribute's value on this type, nil where no trait of it has the attribute.
    func value(_ trait: TraitID, _ attribute: AttributeDescriptor) -> Value? {
        for k in 0..<type.traitCount where type.traitDescriptor(k).id == trait {
            return type.value(trait: k, attribute: attribute.id)
        }
        return nil
    }

    /// OnOffLight, DimmableLight and ColorTemperatureLight: the template schema, the only light schema whose commands
    /// can be Hearth requests and that has transitions. Brightness is Matter's 1–254 scaled to Home Assistant's
    /// 0–255; a transition in seconds becomes tenths; colour temperatures are mireds on both sides.
    func light() -> (String, DiscoveryJSON) {
        let dimmable = has(.levelControl)
        let tunable = has(.colorControl)
        var c = base(platform: "light", key: "light", role: "Light")
        c += [("schema", .string("template")), stateTopic, commandTopic, ("qos", .int(1))]
        c.append(
            ("state_template", template("light state") { "{{ 'on' if \(attribute(.onOff, "onOff")) else 'off' }}" }))
        if dimmable {
            c.append(
                (
                    "brightness_template",
                    template("light brightness") {
                        let level = attribute(.levelControl, "currentLevel")
                        return "{% set l = \(level) %}{{ ((l * 255 / 254) | round) | int if l is not none else '' }}"
                    }
                ))
            c.append(
                (
                    "command_on_template",
                    template("light on \(tunable ? "tunable" : "dimmable")") { onTemplate(tunable: tunable) }
                ))
            if tunable {
                c.append(("color_temp_template", template("light temperature") {
                    "{{ \(attribute(.colorControl, "colorTemperatureMireds")) }}"
                }))
                let range = ColorControlServer.defaultPhysicalRange
                let lo = value(.colorControl, ColorControlServer.Attribute.colorTempPhysicalMinMireds)?.intValue
                let hi = value(.colorControl, ColorControlServer.Attribute.colorTempPhysicalMaxMireds)?.intValue
                c.append(("min_mireds", .int(lo ?? range.lowerBound)))
                c.append(("max_mireds", .int(hi ?? range.upperBound)))
            }
        } else {
            c.append(("command_on_template", template("light on") { plainOn }))
        }
        c.append(("command_off_template", template("light off") { request(.onOff, "off") }))
        c.append(("json_attributes_topic", .string(documentTopic)))
        c.append(("json_attributes_template", template("light attributes") {
            "{{ {'global_scene_control': \(attribute(.onOff, "globalSceneControl"))} | to_json }}"
        }))
        c += availability
        return ("\(typeKey)-light", .object(c))
    }

    /// On, as a light's `command_on_template` sends it when nothing else is asked: after an offWithEffect
    /// (globalSceneControl false) an On must recall the global scene, as Matter's controllers do;
    /// onWithRecallGlobalScene is discarded while globalSceneControl is true, so plain On then.
    var plainOn: String {
        let on = request(.onOff, "on"), recall = request(.onOff, "onWithRecallGlobalScene")
        return "{%- if this.attributes.global_scene_control == false -%}\(recall){%- else -%}\(on){%- endif -%}"
    }

    /// A dimmable light's `command_on_template`: a brightness dims (with its transition), and on a tunable light a
    /// temperature alone on a lit light moves the temperature.
    func onTemplate(tunable: Bool) -> String {
        let move = request(.levelControl, "moveToLevelWithOnOff",
                           args: #"{"level":{{ [[(brightness * 254 / 255) | round | int, 1] | max, 254] | min }},"#
                               + #""transitionTime":{{ ([[(transition * 10) | round | int, 0] | max, 65534] | min) "#
                               + #"if transition is defined else 'null' }}}"#)
        guard tunable else {
            return "{%- if brightness is defined -%}\(move){%- else -%}\(plainOn){%- endif -%}"
        }
        // One message is one Hearth request, so one turn_on moves one thing. A temperature alone on a lit light
        // moves the temperature (Home Assistant's colour slider); anything else turns on or dims, as on a
        // DimmableLight. The temperature is mireds (color_temp_kelvin false), clipped by the light.
        let temperature = request(
            .colorControl, "moveToColorTemperature",
            args: #"{"colorTemperatureMireds":{{ [[color_temp | int, 0] | max, 65279] | min }},"#
                + #""transitionTime":{{ [[(transition * 10) | round | int, 0] | max, 65534] | min "#
                + #"if transition is defined else 0 }}}"#)
        return "{%- if color_temp is defined and brightness is not defined and this.state == 'on' -%}\(temperature)"
            + "{%- elif brightness is defined -%}\(move){%- else -%}\(plainOn){%- endif -%}"
    }

    /// OnOffPlugInUnit (and an OnOff on any type that is not a light): a switch.
    func relay() -> (String, DiscoveryJSON) {
        var c = base(platform: "switch", key: "switch", role: "Switch")
        c += [
            ("device_class", .string("outlet")), stateTopic,
            ("value_template", template("switch state") { "{{ 'ON' if \(attribute(.onOff, "onOff")) else 'OFF' }}" }),
            ("state_on", .string("ON")), ("state_off", .string("OFF")),
            commandTopic, ("qos", .int(1)),
            ("payload_on", template("switch on") { request(.onOff, "on") }),
            ("payload_off", template("switch off") { request(.onOff, "off") }),
        ]
        c += availability(of: .onOff)
        return ("\(typeKey)-switch", .object(c))
    }

    /// Fan: on is FanMode On (the fan's high speed; enums are written by name in documents and requests), off is Off;
    /// the percentage is PercentSetting, or on a fan with speeds (relay taps) SpeedSetting over Home Assistant's speed
    /// range 1…SpeedMax; Auto, where the fan has it, is a preset mode.
    func fan() -> (String, DiscoveryJSON) {
        var c = base(platform: "fan", key: "fan", role: "Fan")
        let speedMax = value(.fanControl, FanControlServer.Attribute.speedMax)?.intValue
        let sequence = value(.fanControl, FanControlServer.Attribute.fanModeSequence)?.intValue ?? 0
        let hasAuto = [2, 3, 4].contains(sequence)
        let mode = attribute(.fanControl, "fanMode")
        c += [
            stateTopic, commandTopic, ("qos", .int(1)),
            ("state_value_template", template("fan state") { "{{ 'OFF' if \(mode) == 'off' else 'ON' }}" }),
            ("payload_on", .string("ON")), ("payload_off", .string("OFF")),
            ("command_template", template("fan command") {
                // FanMode On: the fan's top speed, as Matter defines it.
                "{%- if value == 'ON' -%}\(update(.fanControl, #"{"fanMode":"on"}"#))"
                    + "{%- else -%}\(update(.fanControl, #"{"fanMode":"off"}"#)){%- endif -%}"
            }),
            ("percentage_state_topic", .string(documentTopic)), ("percentage_command_topic", .string(setTopic)),
        ]
        if let speedMax {
            c += [
                ("speed_range_min", .int(1)), ("speed_range_max", .int(speedMax)),
                ("percentage_value_template", template("fan speed") {
                    "{{ \(attribute(.fanControl, "speedCurrent")) }}"
                }),
                ("percentage_command_template", template("fan set speed") {
                    update(.fanControl, #"{"speedSetting":{{ value | int }}}"#)
                }),
            ]
        } else {
            c += [
                ("percentage_value_template", template("fan percent") {
                    "{{ \(attribute(.fanControl, "percentCurrent")) }}"
                }),
                ("percentage_command_template", template("fan set percent") {
                    update(.fanControl, #"{"percentSetting":{{ value | int }}}"#)
                }),
            ]
        }
        if hasAuto {
            c += [
                ("preset_modes", .array([.string("auto")])),
                ("preset_mode_state_topic", .string(documentTopic)), ("preset_mode_command_topic", .string(setTopic)),
                ("preset_mode_value_template", template("fan preset") {
                    "{{ 'auto' if \(mode) == 'auto' else 'None' }}"
                }),
                ("preset_mode_command_template", template("fan set preset") {
                    update(.fanControl, #"{"fanMode":"auto"}"#)
                }),
            ]
        }
        c += availability(of: .fanControl)
        return ("\(typeKey)-fan", .object(c))
    }

    /// Window Covering: Home Assistant's position is percent open, Matter's hundredths of a percent closed; open,
    /// close and stop are UpOrOpen, DownOrClose and StopMotion, a position GoToLiftPercentage.
    func cover() -> (String, DiscoveryJSON) {
        var c = base(platform: "cover", key: "cover", role: "Cover")
        let kind = value(.windowCovering, WindowCoveringServer.Attribute.type)?.intValue ?? 0
        let position = attribute(.windowCovering, "currentPositionLiftPercent100ths")
        c += [
            ("device_class", .string(kind == 6 ? "shutter" : kind == 4 ? "curtain" : kind == 5 ? "awning" : "shade")),
            stateTopic, commandTopic, ("qos", .int(1)),
            ("payload_open", template("cover open") { request(.windowCovering, "upOrOpen") }),
            ("payload_close", template("cover close") { request(.windowCovering, "downOrClose") }),
            ("payload_stop", template("cover stop") { request(.windowCovering, "stopMotion") }),
            (
                "value_template",
                template("cover state") {
                    let status = attribute(.windowCovering, "operationalStatus")
                    // OperationalStatus is a bitmap, written in the document as its flags.
                    return "{% set s = \(status) %}{% set p = \(position) %}"
                        + "{{ 'opening' if s.liftOpening else 'closing' if s.liftClosing else 'open' if p is not none "
                            + "and p < 10000 "
                        + "else 'closed' if p == 10000 else 'None' }}"
                }
            ),
            ("position_topic", .string(documentTopic)),
            ("position_template", template("cover position") {
                "{% set p = \(position) %}{{ (100 - ((p / 100) | round | int)) if p is not none else 'None' }}"
            }),
            ("set_position_topic", .string(setTopic)),
            ("set_position_template", template("cover set position") {
                let closed = #"(100 - ([[position | int, 0] | max, 100] | min)) * 100"#
                return request(.windowCovering, "goToLiftPercentage",
                               args: #"{"liftPercent100thsValue":{{ "# + closed + #" }}}"#)
            }),
        ]
        c += availability(of: .windowCovering)
        return ("\(typeKey)-cover", .object(c))
    }

    /// An attribute write as a template sends it: `{"type":"Fan","trait":"fanControl","update":{…}}`.
    func update(_ trait: TraitID, _ attributes: String) -> String {
        #"{"type":"\#(typeName)","trait":"\#(trait.qualifiedName)","update":\#(attributes)}"#
    }

    /// Humidity and temperature: Matter's hundredths as the unit, `None` (unknown) while the reading is null.
    func measurement(_ trait: TraitID, key: String, role: String, deviceClass: String, unit: String)
        -> (String, DiscoveryJSON)
    {
        var c = base(platform: "sensor", key: key, role: role)
        c += [
            ("device_class", .string(deviceClass)), ("unit_of_measurement", .string(unit)),
            ("state_class", .string("measurement")), ("suggested_display_precision", .int(1)), stateTopic,
            ("value_template", .string("{% set v = \(attribute(trait, "measuredValue")) %}"
                                       + "{{ (v / 100) if v is not none else 'None' }}")),
        ]
        c += availability
        return ("\(typeKey)-\(key)", .object(c))
    }

    /// A plug's meter: Matter's mW, mV and mA as W, V and A; `None` (unknown) while the reading is null.
    func electrical(_ trait: TraitID, _ attributeName: String, key: String, role: String, deviceClass: String,
                    unit: String) -> (String, DiscoveryJSON)
    {
        var c = base(platform: "sensor", key: key, role: role)
        c += [
            ("device_class", .string(deviceClass)), ("unit_of_measurement", .string(unit)),
            ("state_class", .string("measurement")),
            ("suggested_display_precision", .int(deviceClass == "power" ? 1 : 2)),
            stateTopic,
            ("value_template", .string("{% set v = \(attribute(trait, attributeName)) %}"
                                       + "{{ (v / 1000) if v is not none else 'None' }}")),
        ]
        c += availability(of: trait)
        return ("\(typeKey)-\(key)", .object(c))
    }

    /// The energy a plug's load drew over its lifetime: Wh, `total_increasing` (Home Assistant's energy dashboard
    /// takes it as a meter reading), from CumulativeEnergyImported's mWh.
    func energy() -> (String, DiscoveryJSON) {
        var c = base(platform: "sensor", key: "energy", role: "Energy")
        c += [
            ("device_class", .string("energy")), ("unit_of_measurement", .string("Wh")),
            ("state_class", .string("total_increasing")), ("suggested_display_precision", .int(1)), stateTopic,
            ("value_template", .string("{% set v = "
                + "\(attribute(.electricalEnergyMeasurement, "cumulativeEnergyImported")) %}"
                                       + "{{ (v.energy / 1000) if v is not none else 'None' }}")),
        ]
        c += availability(of: .electricalEnergyMeasurement)
        return ("\(typeKey)-energy", .object(c))
    }

    /// GenericSwitch: an event entity fed by the events topic; Matter's event names in snake case
    /// (`initialPress` → `initial_press`), the event's fields as attributes.
    func switchEvents() -> (String, DiscoveryJSON) {
        var names: [String] = []
        for k in 0..<type.traitCount where type.traitDescriptor(k).id == .switchTrait {
            names = type.traitDescriptor(k).events.map(\.name)
        }
        // Built in steps: one long concatenation is more than Swift 6.2's type checker takes in reasonable time.
        let pairs = names.map { "'\($0)': '\(Self.snakeCase($0))'" }.joined(separator: ", ")
        var template = "{%- set names = {" + pairs + "} -%}"
        template += "{%- if value_json.type == '\(typeName)' and value_json.trait == 'switch' and value_json.event in "
        template += "names -%}"
        template += "{{ dict(value_json.fields, event_type=names[value_json.event]) | to_json }}{%- endif -%}"
        var c = base(platform: "event", key: "press", role: "Button")
        c += [
            ("device_class", .string("button")),
            ("event_types", .array(names.map { .string(Self.snakeCase($0)) })),
            ("state_topic", .string(discovery.eventsTopic(device.id))),
            ("value_template", .string(template)),
        ]
        c += availability
        return ("\(typeKey)-press", .object(c))
    }

    /// ContactSensor: a `binary_sensor` of device class `door`. Matter's StateValue is true while the contact is
    /// closed; Home Assistant's door is on while it is open.
    func contact() -> (String, DiscoveryJSON) {
        var c = base(platform: "binary_sensor", key: "contact", role: "Contact")
        c += [
            ("device_class", .string("door")), stateTopic,
            ("value_template", .string("{{ 'OFF' if \(attribute(.booleanState, "stateValue")) else 'ON' }}")),
            ("payload_on", .string("ON")), ("payload_off", .string("OFF")),
        ]
        c += availability
        return ("\(typeKey)-contact", .object(c))
    }

    /// OccupancySensor: a `binary_sensor` of device class `occupancy`, on while Occupancy's `occupied` bit is set (the
    /// hold time included: Home Assistant sees what Matter clients see).
    func occupancy() -> (String, DiscoveryJSON) {
        var c = base(platform: "binary_sensor", key: "occupancy", role: "Occupancy")
        c += [
            ("device_class", .string("occupancy")), stateTopic,
            ("value_template",
             .string("{{ 'ON' if \(attribute(.occupancySensing, "occupancy")).occupied else 'OFF' }}")),
            ("payload_on", .string("ON")), ("payload_off", .string("OFF")),
        ]
        c += availability
        return ("\(typeKey)-occupancy", .object(c))
    }

    /// Identify: a button with device class `identify`; a press identifies for `identifySeconds`.
    func identify(mainRole: String?) -> (String, DiscoveryJSON) {
        let role = type.isPrimaryType ? "Identify" : mainRole.map { "Identify \($0.lowercased())" } ?? "Identify"
        var c = base(platform: "button", key: "identify", role: role)
        c += [
            ("device_class", .string("identify")), ("entity_category", .string("diagnostic")), commandTopic,
            ("qos", .int(1)),
            ("payload_press", template("identify") {
                request(.identify, "identify", args: #"{"identifyTime":\#(options.identifySeconds)}"#)
            }),
        ]
        c += availability
        return ("\(typeKey)-identify", .object(c))
    }

    static func snakeCase(_ name: String) -> String {
        var out = ""
        for c in name {
            if c.isUppercase { out.append("_") }
            out.append(contentsOf: c.lowercased())
        }
        return out
    }
}
