public import HearthConfig
import HearthContract
import HearthEngine
import HearthHardware
import HearthModel

/// The keys of `hearth.yaml`: `HubConfiguration.read` reads by these tables, and `ConfigurationSchema`
/// writes the same tables out as the JSON Schema editors check the file with. Device types come from
/// the model's catalogue, traits and their attributes from the engine's registry, binding kinds and
/// their keys from HearthHardware.
extension HubConfiguration {
    public enum Keys {
        static let idHint = "an id is part of MQTT topics, so it is not empty and has no '/', '+' or '#'"
        static let id = ConfigShape.textMatching("^[^/+#]+$", hint: idHint)

        public static var root: ConfigSection {
            ConfigSection(
                [
                    ConfigKey("hub", .section(hub), required: true, "the hub's id, board and where it keeps its state"),
                    ConfigKey("mqtt", .section(mqtt), "the MQTT broker (default 127.0.0.1:1883, no credentials)"),
                    ConfigKey(
                        "devices", .list(.named("device", .section(device))), required: true,
                        "the devices of this hub"),
                    ConfigKey("peers", .list(.section(peer)), "other hubs this one routes commands to or mirrors"),
                    ConfigKey(
                        "bindings", .list(.section(binding)),
                        "switch events that send a command to a device, on this hub or another"),
                    ConfigKey(
                        "groups", .list(.named("group", .section(group))),
                        "groups of this hub's lights and plugs, and their scenes (docs/clusters/groups.md)"),
                    ConfigKey(
                        "homeAssistant", .section(homeAssistant),
                        "Home Assistant MQTT discovery (docs/home-assistant.md); on by default"),
                    ConfigKey(
                        "web", .section(web), "the hub's own web page and its JSON API (docs/web-api.md); on by default"
                    ),
                    ConfigKey(
                        "matter", .section(matter),
                        "the hub as a Matter node (docs/matter.md); on by default on a board, off on the simulated "
                            + "one"),
                ], help: "A Hearth hub configuration (hearth.yaml). docs/configuration.md explains every key.",
                extraKeys: anchorKeys)
        }

        /// Top-level `x-…` keys are ignored, so a file can hold anchors to repeat (`x-relay: &relay {…}`), as
        /// Docker Compose files do.
        static let anchorKeys = ConfigExtraKeys(pattern: "^x-", shape: .any) { $0.hasPrefix("x-") }

        static let homeAssistant = ConfigSection([
            ConfigKey("discovery", .bool, "announce every device to Home Assistant; default true"),
            ConfigKey("prefix", .textMatching("^[^+#]+$", hint: "a topic prefix: not empty, no '+' or '#'"),
                      "Home Assistant's discovery prefix; default homeassistant"),
        ])

        static let web = ConfigSection([
            ConfigKey("enabled", .bool, "serve the web page; default true"),
            ConfigKey(
                "listen", .text,
                "the address to listen on: 0.0.0.0 (every IPv4 interface, the default), :: (IPv6 too) or 127.0.0.1 "
                    + "(this machine only, e.g. behind a reverse proxy)"),
            ConfigKey("port", .int(1...65535, unit: ""), "the TCP port; default \(WebSettings.defaultPort)"),
            ConfigKey(
                "tls", .section(webTLS), "serve the page over HTTPS with this certificate and key; default plain HTTP"),
        ])

        static let webTLS = ConfigSection([
            ConfigKey(
                "certificate", .text, required: true,
                "the page's certificate (PEM), then any intermediate certificates; relative to this file"),
            ConfigKey(
                "key", .text, required: true,
                "the certificate's private key (PEM, not encrypted), readable by its owner only; relative to this "
                    + "file"),
        ])

        static let matter = ConfigSection([
            ConfigKey("enabled", .bool, "be a Matter node; default true on a board, false on the simulated board"),
            ConfigKey("port", .int(1...65535, unit: ""), "the UDP port Matter listens on; default 5540"),
            ConfigKey(
                "interfaces", .list(.text),
                "the network interfaces Matter announces on with mDNS (its UDP port is open on every address); "
                    + "default every interface but loopback"
            ),
            ConfigKey(
                "bridge", .choice(MatterSettings.BridgeScope.allCases.map(\.rawValue)),
                "whose devices the Matter bridge shows: hub (this hub's own) or home (its peers' too, each reached "
                    + "through its owner; for one hub of a home); default hub"),
            ConfigKey(
                "discriminator", .int(0...MatterSettings.discriminators.upperBound, unit: ""),
                "a fixed 12-bit discriminator, for tests; default one chosen at the first start and kept"),
            ConfigKey(
                "passcode", .int(MatterSettings.passcodes, unit: ""),
                "a fixed setup passcode, for tests (not 11111111, 12345678 and the like); default one chosen at "
                    + "the first start and kept, readable by the hub alone"),
        ])

        static let hub = ConfigSection([
            ConfigKey("id", id, "the hub's id in MQTT topics; default: the host name"),
            ConfigKey(
                "board", .text, required: true,
                "a board in boards/ (sim, rpi4, rpi5, rpi-zero-2w, qemu-gpio-sim) or a path to a board file"),
            ConfigKey(
                "stateDirectory", .text, "where names, rooms and settings survive restarts; default /var/lib/hearth"),
            ConfigKey("logLevel", .choice(HubConfiguration.logLevels), "how much hearthd logs; default info"),
            ConfigKey(
                "stepsPerSecond", .int(1...200, unit: " steps per second"),
                "how often a dimmer's output moves during a transition; default 50"),
            ConfigKey(
                "heartbeat",
                .duration(
                    .seconds(Heartbeat.intervals.lowerBound) ... .seconds(Heartbeat.intervals.upperBound),
                    defaultUnit: "s"),
                "how often this hub tells hubs across a bridge it is alive, in whole seconds (1s…1h); they show it "
                    + "offline after 2 silent intervals; default 10s when a peer is route: remote, otherwise none"),
        ])

        static let mqtt = ConfigSection([
            ConfigKey("host", .text, "the broker's host name or address; default 127.0.0.1"),
            ConfigKey("port", .int(1...65535, unit: ""), "the broker's port; default 1883"),
            ConfigKey("prefix", .textMatching(TopicScheme.prefixPattern, hint: TopicScheme.prefixRule),
                      "topics are <prefix>/<hub id>/…; default hearth"),
            ConfigKey("clientId", .text, "the MQTT client id; default hearth-<hub id>"),
            ConfigKey("keepAlive", .duration(.seconds(5) ... .seconds(65535), defaultUnit: "s"),
                      "MQTT keep-alive (5s…18h); a dead hub is noticed after 1.5 × this; default 30s"),
            ConfigKey("username", .secret, "the MQTT user name, or !secret NAME"),
            ConfigKey("password", .secret, "the MQTT password: better !secret NAME (secrets.yaml) or passwordFile"),
            ConfigKey("passwordFile", .text,
                      "a file whose first line is the MQTT password, read as it is; readable by its owner only"),
            ConfigKey("tls", .section(tls), "TLS to the broker"),
            ConfigKey("protocol", .choice(["5", "3.1.1"]),
                      "MQTT version: 5 (falls back to 3.1.1 if the broker refuses; default) or 3.1.1"),
        ], rules: [.atMostOne("password", "passwordFile", message: "give password or passwordFile, not both")])

        static let tls = ConfigSection([
            ConfigKey("caFile", .text, "the CA that signed the broker's certificate (PEM)"),
            ConfigKey("certFile", .text, "this hub's client certificate (PEM), with keyFile"),
            ConfigKey("keyFile", .text, "the client certificate's key (PEM), with certFile"),
            ConfigKey("verify", .bool, "check the broker's certificate; default true (then caFile is needed)"),
        ], rules: [.allOrNone("certFile", "keyFile")])

        static let peer = ConfigSection([
            ConfigKey("hub", id, required: true, "the peer hub's id"),
            ConfigKey(
                "route", .choice(["local", "remote"]),
                "local (default: on this broker) or remote (across a bridge: also watched by its heartbeat)"),
            ConfigKey(
                "timeout", .duration(.milliseconds(100) ... .seconds(60), defaultUnit: "s"),
                "how long a request forwarded to it waits for its answer (100ms…60s); default 3s, 5s when remote"),
        ])

        static let group = ConfigSection([
            ConfigKey("id", .int(1...0xFFFF, unit: ""), required: true,
                      "the group id (1…65535), the same on every hub: commands go to <prefix>/groups/<id>/set"),
            ConfigKey("name", .textUpTo(16), "the group's name (at most 16 bytes); default none"),
            ConfigKey("members", .list(id), required: true,
                      "devices of this hub in the group (each device type with groups joins)"),
            ConfigKey("scenes", .list(.named("scene", .section(scene))), "the group's scenes"),
        ])

        static let scene = ConfigSection([
            ConfigKey("id", .int(0...254, unit: ""), required: true, "the scene id (0…254), unique in the group"),
            ConfigKey("name", .textUpTo(16), "the scene's name (at most 16 bytes)"),
            ConfigKey(
                "transitionTime", .duration(.zero ... .seconds(60000), defaultUnit: "ms"),
                "how long a recall takes (up to 60000s); default 0"),
            ConfigKey(
                "values", .section(sceneValues), required: true,
                "what the scene sets, by trait and attribute, e.g. {onOff: {onOff: true}, levelControl: "
                    + "{currentLevel: 80}}"
            ),
        ])

        /// Every scene-capable trait, with the attributes a scene stores of it.
        static let sceneValues: ConfigSection = {
            ConfigSection(TraitRegistry.standard.servers.values.compactMap { server in
                guard let capable = server as? any SceneCapable.Type else { return nil }
                let d = server.descriptor
                    return ConfigKey(
                        d.id.qualifiedName,
                        .section(
                            ConfigSection(
                                capable.sceneAttributes.compactMap { id in
                                    d.attribute(id: id).map {
                                        ConfigKey(
                                            $0.name, valueShape($0.type, constraint: $0.constraint, nullable: false),
                                            "\($0.type)")
                                    }
                                })), "the \(d.id.qualifiedName) attributes a scene stores")
            }.sorted { $0.name < $1.name })
        }()

        static let binding = ConfigSection([
            ConfigKey("from", .text, required: true, "a local GenericSwitch device"),
            ConfigKey(
                "event", .choice(["press", "release", "latch", "any"]),
                "which switch events fire it; default press and latch"),
            ConfigKey(
                "to", .section(bindingTarget), required: true, "the command to send: {hub, device, trait, command}"),
        ])

        static let bindingTarget = ConfigSection([
            ConfigKey("hub", id, "the hub that owns the device; default this hub"),
            ConfigKey("device", id, required: true, "the target device's id"),
            ConfigKey("type", .text, "the device type on that device, when it has several"),
            ConfigKey("trait", .text, required: true, "e.g. onOff"),
            ConfigKey("command", .text, required: true, "e.g. toggle"),
            ConfigKey("args", .dictionary(.anyOf([.scalar, .dictionary(.bool)])),
                      "the command's fields; quoted values are text, a bitmap is a mapping of its flags"),
        ])

        static let deviceKeys = [
            "id", "name", "room", "structure", "matter", "info", "type", "types", "traits", "binding"
        ]
        static let typeKeys = ["type", "primary", "traits", "binding", "mirror"]

        /// Built once: every device of the configuration is read against it, and it holds every device type's traits
        /// and binding kinds (building it per device was half of start-up with 1,000 devices).
        static let device: ConfigSection = {
            ConfigSection(
                [
                    ConfigKey("id", id, required: true, "a stable id, used in MQTT topics"),
                    ConfigKey("name", .text, "what users see; a user's rename wins once made; default the id"),
                    ConfigKey("room", .text, "the room's id"),
                    ConfigKey("structure", .text, "the structure's (home's) id"),
                    ConfigKey("matter", .bool, "on the hub's Matter bridge (when matter.enabled); default true"),
                    ConfigKey(
                        "info", infoShape,
                        "basicInformation of the primary type: vendorName, productName, serialNumber, …"),
                    ConfigKey(
                        "type", .choice(typeNames),
                        "the device type, when it has one (then traits and binding sit here too)"),
                    ConfigKey(
                        "types", .list(.named("deviceType", .section(deviceType))),
                        "the device types, when it has several; the first is primary"),
                    ConfigKey("traits", .any, "trait settings by trait name (see the device type)"),
                    ConfigKey("binding", .any, "the hardware that drives the device type (see the device type)"),
                ],
                rules: [
                    .atMostOne(
                        "types", "type", message: "'type' goes inside each entry of 'types' when 'types' is given"),
                    .atMostOne(
                        "types", "traits", message: "'traits' goes inside each entry of 'types' when 'types' is given"),
                    .atMostOne(
                        "types", "binding", message: "'binding' goes inside each entry of 'types' when 'types' is given"
                    ),
                    .atLeastOne("type", "types"),
                ], cases: typeCases)
        }()

        static let deviceType: ConfigSection = {
            ConfigSection([
                ConfigKey("type", .choice(typeNames), required: true, "a device type"),
                ConfigKey("primary", .bool, "this is the device's primary type; default: the first"),
                ConfigKey("traits", .any, "trait settings by trait name"),
                ConfigKey("binding", .any, "the hardware that drives this device type"),
                ConfigKey("mirror", .section(mirror), "this type mirrors a device on another hub (then no binding)"),
            ], rules: [.atMostOne("mirror", "binding",
                                  message: "a mirrored type has no binding here: its hardware is on the other hub")],
            cases: typeCases)
        }()

        static let mirror = ConfigSection([
            ConfigKey("hub", id, required: true, "the hub that owns it"),
            ConfigKey("device", id, required: true, "the device's id on that hub"),
            ConfigKey("type", .text, "the device type there; default the same"),
        ])

        static let infoShape: ConfigShape = TraitRegistry.standard.server(for: .basicInformation).map {
            .named("trait.basicInformation", .section(trait($0.descriptor)))
        } ?? .any

        static var typeNames: [String] { DeviceTypeDescriptor.catalogue.map(\.name) }

        /// For each device type: which traits it may have and which binding kinds fit it.
        static let typeCases: [ConfigCase] = {
            DeviceTypeDescriptor.catalogue.map { type in
                ConfigCase(when: "type", is: type.name, then: .section(ConfigSection([
                    ConfigKey("traits", .named("traits.\(type.name)", .section(traits(for: type))),
                              "trait settings of a \(type.name)"),
                    ConfigKey("binding", bindingShape(for: type.name), "the hardware that drives a \(type.name)"),
                ], closed: false)))
            }
        }()

        /// The traits a device type may have (Matter's required and optional ones, and any manufacturer's).
        static func traits(for type: DeviceTypeDescriptor) -> ConfigSection {
            let ids = type.requiredTraits + type.optionalTraits
            return ConfigSection(ids.map { id in
                let shape: ConfigShape = TraitRegistry.standard.server(for: id).map {
                    .named("trait.\(id.qualifiedName)", .section(trait($0.descriptor)))
                } ?? .any
                return ConfigKey(id.qualifiedName, shape, "")
            }, extraKeys: manufacturerTraits)
        }

        /// A manufacturer's trait (`com.example.spinner`): its settings are the engine's to check.
        static let manufacturerTraits = ConfigExtraKeys(pattern: "\\.", shape: .any) { $0.contains(".") }

        /// A trait's settings: its attributes' starting values and its Matter `features`.
        static func trait(_ descriptor: TraitDescriptor) -> ConfigSection {
            ConfigSection([ConfigKey("features", .listOrOne(.text), "the trait's Matter features, e.g. [offOnly]")]
                + descriptor.attributes.map { a in
                    ConfigKey(a.name, attributeShape(a), a.isWritable
                              ? "\(a.type), writable: a client's later write is kept and wins after a restart"
                              : "\(a.type), read-only for clients: set here")
                })
        }

        /// What a configured attribute value may be: enums by name, bitmaps as a list of flags, numbers in range,
        /// structs as a mapping of their fields.
        static func attributeShape(_ a: AttributeDescriptor) -> ConfigShape {
            valueShape(a.type, constraint: a.constraint, nullable: a.isNullable)
        }

        static func valueShape(_ type: ValueType, constraint: ClosedRange<Int>?, nullable: Bool) -> ConfigShape {
            let shape: ConfigShape = switch type {
            case .bool: .bool
            case .string(let max): .textUpTo(max)
            case .enumeration(let e): .choice(e.cases.map(\.name))
            case .bitmap(let b): .listOrOne(.choice(b.bits.map(\.name)))
            case .structure(let s): .named("struct.\(s.name)", .section(structSection(s)))
            case .list(let element, _): .list(valueShape(element, constraint: constraint, nullable: false))
            default: .int(constraint ?? type.integerRange ?? 0...0, unit: "")
            }
            return nullable ? .nullable(shape) : shape
        }

        /// A struct's fields, every one of them required.
        static func structSection(_ s: StructType) -> ConfigSection {
            ConfigSection(s.fields.map { f in
                ConfigKey(f.name, valueShape(f.type, constraint: f.constraint, nullable: f.isNullable), required: true,
                          "\(f.type)")
            }, help: "Matter's \(s.name)")
        }

        /// The binding kinds that fit a device type, each with its keys.
        static func bindingShape(for typeName: String) -> ConfigShape {
            let kinds = BindingKindRegistry.standard.kinds(fitting: typeName)
            guard !kinds.isEmpty else { return .nullable(.section(ConfigSection([]))) }
            return .section(
                ConfigSection(
                    [ConfigKey("kind", .choice(kinds.map(\.name)), required: true, "the kind of hardware binding")],
                    closed: false,
                    cases: kinds.map {
                        ConfigCase(when: "kind", is: $0.name, then: .named("binding.\($0.name)", .section($0.section)))
                    }))
        }
    }
}

/// The JSON Schemas of `hearth.yaml` and of board files, written from the readers' own tables.
/// `hearthd schema config|board` prints them; docs/schema/ holds them, and a test keeps those up to date.
public enum ConfigurationSchema {
    public static var config: String {
        ConfigSchema.document(title: "Hearth hub configuration", root: HubConfiguration.Keys.root)
            .rendered() + "\n"
    }

    public static var board: String {
        ConfigSchema.document(title: "Hearth board description", root: Board.Keys.root).rendered() + "\n"
    }
}
