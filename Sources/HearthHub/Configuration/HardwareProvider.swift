public import HearthConfig
public import HearthEngine
public import HearthHardware

/// How the daemon reaches the hardware layer: board files, bindings and the traits they add.
///
/// A seam rather than direct calls so that a test can run the daemon's assembly without a board, while the
/// bindings themselves are tested on their own (sysfs trees, the simulated board, the HIL VM).
public protocol HardwareProvider: Sendable {
    func loadBoard(file: String, diagnostics: ConfigDiagnostics) -> Board?
    /// A device type's `binding:` section as a binding, or nil after recording problems.
    func makeBinding(_ config: ConfigValue, context: BindingContext) -> (any HardwareBinding)?
    /// Manufacturer traits the bindings add, registered in the engine.
    var traitServers: [any TraitServer.Type] { get }
}

/// The real thing: board files and the binding kinds of `HearthHardware`.
public struct BoardHardware: HardwareProvider {
    public init() {}

    public func loadBoard(file: String, diagnostics: ConfigDiagnostics) -> Board? {
        Board.load(file: file, diagnostics: diagnostics)
    }

    public func makeBinding(_ config: ConfigValue, context: BindingContext) -> (any HardwareBinding)? {
        BindingKinds.make(config, context: context)
    }

    public var traitServers: [any TraitServer.Type] { HardwareTraits.servers }
}
