public import HearthConfig
public import HearthEngine
public import HearthHardware

/// How the daemon reaches the hardware layer: board files, bindings and the traits they add.
///
/// A seam rather than direct calls so that the daemon's tests can run a hub with no hardware at all
/// while the hardware bindings are tested on their own (sysfs trees, the simulated board, the HIL VM).
public protocol HardwareProvider: Sendable {
    func loadBoard(file: String, diagnostics: ConfigDiagnostics) -> Board?
    /// A device type's `binding:` section as a binding, or nil after recording problems.
    func makeBinding(_ config: ConfigValue, deviceID: String, typeName: String, board: Board,
                     log: @escaping @Sendable (String) -> Void) -> (any HardwareBinding)?
    /// Manufacturer traits the bindings add, registered in the engine.
    var traitServers: [any TraitServer.Type] { get }
}
