// AdministratorCommissioning (0x003C) with the Basic feature (Matter 1.4 §11.19): an administrator opens an enhanced
// commissioning window with its own PASE verifier, or a basic one with the node's passcode, and revokes it; the
// attributes say which window is open and who opened it. Refusals carry the cluster's status codes (Busy,
// PAKEParameterError, WindowNotOpen) or INVALID_COMMAND for a timeout or discriminator out of bounds.

final class AdministratorCommissioningCluster: ClusterServer {
    static let clusterID: ClusterID = 0x003C
    enum Attribute {
        static let windowStatus: AttributeID = 0, adminFabricIndex: AttributeID = 1, adminVendorID: AttributeID = 2
    }
    enum Command {
        static let openCommissioningWindow: CommandID = 0x00, openBasicCommissioningWindow: CommandID = 0x01
        static let revokeCommissioning: CommandID = 0x02
    }
    /// The cluster's status codes (StatusCodeEnum).
    enum ClusterStatus {
        static let busy: UInt8 = 2, pakeParameterError: UInt8 = 3, windowNotOpen: UInt8 = 4
    }

    let id = AdministratorCommissioningCluster.clusterID
    let revision: UInt16 = 1
    /// Bit 0: Basic (OpenBasicCommissioningWindow).
    let featureMap: UInt32 = 1
    let attributes = [
        AttributeDefinition(Attribute.windowStatus, "WindowStatus"),
        AttributeDefinition(Attribute.adminFabricIndex, "AdminFabricIndex", [.nullable]),
        AttributeDefinition(Attribute.adminVendorID, "AdminVendorId", [.nullable]),
    ]
    let acceptedCommands = [
        CommandDefinition(
            Command.openCommissioningWindow, "OpenCommissioningWindow", privilege: .administer, timed: true),
        CommandDefinition(
            Command.openBasicCommissioningWindow, "OpenBasicCommissioningWindow", privilege: .administer,
            timed: true),
        CommandDefinition(Command.revokeCommissioning, "RevokeCommissioning", privilege: .administer, timed: true),
    ]

    private let window: CommissioningWindow
    private let state: CommissioningState

    init(window: CommissioningWindow, state: CommissioningState) {
        self.window = window
        self.state = state
    }

    func read(_ attribute: AttributeID, context: ReadContext) throws(IMError) -> TLVValue {
        let current = window.current
        switch attribute {
        case Attribute.windowStatus: return .uint(window.status.rawValue)
        case Attribute.adminFabricIndex: return current?.adminFabricIndex.map { .uint($0) } ?? .null
        case Attribute.adminVendorID: return current?.adminVendorID.map { .uint($0) } ?? .null
        default: throw unsupported(attribute, "AdministratorCommissioning")
        }
    }

    func invoke(_ command: CommandID, fields: TLVElement?, context: ActionContext) throws(IMError) -> CommandResult {
        switch command {
        case Command.openCommissioningWindow:
            let f = try CommandFields(fields, "OpenCommissioningWindow")
            let timeout = try f.unsigned(0, UInt16.self), serialized = try f.bytes(1)
            let discriminator = try f.unsigned(2, UInt16.self), iterations = try f.unsigned(3, UInt32.self)
            let salt = try f.bytes(4)
            try refuseWhileBusy()
            let verifier: PASEVerifier
            do { verifier = try PASEVerifier(serialized: serialized, salt: salt, iterations: iterations) } catch {
                throw Self.imError(.pakeParameters("\(error)"))
            }
            try open(.enhanced(verifier: verifier, discriminator: discriminator), timeout: timeout, context: context)
            return .success
        case Command.openBasicCommissioningWindow:
            let f = try CommandFields(fields, "OpenBasicCommissioningWindow")
            let timeout = try f.unsigned(0, UInt16.self)
            try refuseWhileBusy()
            try open(.basic, timeout: timeout, context: context)
            return .success
        case Command.revokeCommissioning:
            do { try window.close(.revoked) } catch { throw Self.imError(error) }
            // A commissioning under way through the window ends with it (§11.19.8.3).
            if state.isFailSafeArmed { state.expireFailSafeNow() }
            return .success
        default:
            throw IMError(
                .unsupportedCommand, "AdministratorCommissioning has no command 0x\(String(command, radix: 16))")
        }
    }

    private func refuseWhileBusy() throws(IMError) {
        if window.current != nil { throw Self.imError(.windowAlreadyOpen) }
        if state.isFailSafeArmed { throw Self.imError(.failSafeArmed) }
    }

    private func open(_ kind: CommissioningWindowInfo.Kind, timeout: UInt16, context: ActionContext) throws(IMError) {
        let opener = context.subject.fabricIndex
        let vendor = state.fabrics.first { $0.index == opener }?.vendorID
        do {
            try window.open(kind, timeoutSeconds: Int(timeout), adminFabricIndex: opener == 0 ? nil : opener,
                            adminVendorID: vendor, failSafeArmed: state.isFailSafeArmed, now: context.now)
        } catch {
            throw Self.imError(error)
        }
    }

    /// The status the specification gives each refusal.
    static func imError(_ error: CommissioningWindowError) -> IMError {
        switch error {
        case .windowAlreadyOpen, .failSafeArmed: IMError(.failure, clusterStatus: ClusterStatus.busy, "\(error)")
        case .pakeParameters: IMError(.failure, clusterStatus: ClusterStatus.pakeParameterError, "\(error)")
        case .windowNotOpen: IMError(.failure, clusterStatus: ClusterStatus.windowNotOpen, "\(error)")
        case .timeoutOutOfRange, .discriminatorOutOfRange: IMError(.invalidCommand, "\(error)")
        }
    }
}

extension CommissioningState {
    /// Ends the fail-safe now, rolling back what was done under it, whoever armed it (a revoked window, a reset).
    func expireFailSafeNow() {
        expireIfDue(now: MatterInstant(milliseconds: .max))
    }
}
