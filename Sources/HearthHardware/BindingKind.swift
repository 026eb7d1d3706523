public import HearthConfig
public import HearthModel

/// One kind of hardware binding, as a device type's `binding: {kind: …}` names it: the device types it drives, its
/// section (the keys its reader admits and the JSON Schema lists) and the factory that reads the section into a
/// binding.
///
/// Each kind is declared beside its configuration (`BindingKind.relay` in `Relay/RelayConfiguration.swift`) and listed
/// once in `BindingKindRegistry.standard`, from which the dispatch, the kinds that fit a device type and the schema
/// are derived. The factory is part of the value, so a kind cannot be declared without one.
public struct BindingKind: Sendable {
    /// What `kind:` says, e.g. `pwmDimmer`.
    public let name: String
    /// The device types it can drive.
    public let deviceTypes: [DeviceTypeDescriptor]
    /// `kind` first, then the kind's own keys.
    public let section: ConfigSection
    /// Reads the section and builds the binding. Returns nil only after recording, at the right key, each problem
    /// that stops it: the registry treats a nil without a problem as a fault of the kind, not of the file.
    let factory: @Sendable (BindingReader) -> (any HardwareBinding)?

    init(_ name: String, fits deviceTypes: [DeviceTypeDescriptor], help: String, keys: [ConfigKey],
         rules: [ConfigRule], factory: @escaping @Sendable (BindingReader) -> (any HardwareBinding)?) {
        self.name = name
        self.deviceTypes = deviceTypes
        section = ConfigSection(
            [ConfigKey("kind", .choice([name]), required: true, "the kind of hardware binding")] + keys,
            help: help, rules: rules)
        self.factory = factory
    }

    /// Whether it can drive a device type of this name.
    public func fits(_ typeName: String) -> Bool { deviceTypes.contains { $0.name == typeName } }
}
