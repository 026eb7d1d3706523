public import HearthConfig
public import HearthEngine
public import HearthHardware
import HearthHardwareLinux
import HearthSimulator

/// How the daemon reaches the hardware layer: board files, the backend a board's bindings open hardware through,
/// the bindings and the traits they add.
///
/// A seam rather than direct calls so that a test can run the daemon's assembly without a board, while the
/// bindings themselves are tested on their own (sysfs trees, the simulated board, the HIL VM).
public protocol HardwareProvider: Sendable {
    func loadBoard(file: String, diagnostics: ConfigDiagnostics) -> Board?
    /// Where the bindings of `board` open their hardware; made once per board and handed to every binding.
    func backend(for board: Board) -> any HardwareBackend
    /// A device type's `binding:` section as a binding, or nil after recording problems.
    func makeBinding(_ config: ConfigValue, context: BindingContext) -> (any HardwareBinding)?
    /// Manufacturer traits the bindings add, registered in the engine.
    var traitServers: [any TraitServer.Type] { get }
}

/// The real thing: board files, the kernel's hardware (`LinuxHardware`) or a simulated board's memory
/// (`SimulatedHardware`) by the board's `simulated:`, and the binding kinds of `HearthHardware`
/// (`BindingKindRegistry.standard`, which the configuration's schema lists too).
public struct BoardHardware: HardwareProvider {
    public init() {}

    public func loadBoard(file: String, diagnostics: ConfigDiagnostics) -> Board? {
        Board.load(file: file, diagnostics: diagnostics)
    }

    public func backend(for board: Board) -> any HardwareBackend {
        board.isSimulated ? SimulatedHardware(board: board, seed: board.seed) : LinuxHardware()
    }

    public func makeBinding(_ config: ConfigValue, context: BindingContext) -> (any HardwareBinding)? {
        BindingKindRegistry.standard.make(config, context: context)
    }

    /// Registered whatever the board, as before the split: a configuration is checked the same on any board.
    public var traitServers: [any TraitServer.Type] { SimulatedHardware.traitServers }
}
