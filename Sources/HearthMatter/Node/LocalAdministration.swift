// What the hub's owner does to the node from the hub itself, not over Matter: open an enhanced commissioning window
// with a passcode the hub makes, remove a fabric, forget every fabric. Each is what an administrator's command would
// do (the same window, the same removal), with no fabric as its opener; the node's sessions follow through the same
// events (`MatterNode`'s local administration runs these on its loop).

/// Why a local administration request was refused.
public enum MatterAdministrationError: Error, Sendable, Equatable, CustomStringConvertible {
    case window(CommissioningWindowError)
    case noSuchFabric(FabricIndex, existing: [FabricIndex])
    /// A window asked of a node without a fabric, which is commissionable with its own code already.
    case notCommissioned
    case failed(String)

    public var description: String {
        switch self {
        case .window(let error): "\(error)"
        case .noSuchFabric(let index, let existing):
            "no fabric \(index)"
                + (existing.isEmpty
                    ? ": the hub has no fabric" : "; the hub has \(existing.map(String.init).joined(separator: ", "))")
        case .notCommissioned: "the hub has no fabric yet: pair it with its own code (`hearthd matter code`)"
        case .failed(let why): why
        }
    }
}

extension MatterNodeCore {
    /// Opens an enhanced window with `verifier` and `discriminator` for `timeoutSeconds` on a node that has a fabric.
    public func openWindowLocally(verifier: PASEVerifier, discriminator: UInt16, timeoutSeconds: Int,
                                  now: MatterInstant) throws(MatterAdministrationError) {
        guard !commissioning.fabrics.isEmpty else { throw .notCommissioned }
        do {
            try window.open(
                .enhanced(verifier: verifier, discriminator: discriminator), timeoutSeconds: timeoutSeconds,
                adminFabricIndex: nil, adminVendorID: nil, failSafeArmed: commissioning.isFailSafeArmed, now: now)
        } catch {
            throw .window(error)
        }
    }

    /// Removes a fabric as RemoveFabric does: its ACL entries, subscriptions and sessions go with it.
    public func removeFabricLocally(_ index: FabricIndex) throws(MatterAdministrationError) {
        let existing = commissioning.fabrics.map(\.index)
        guard existing.contains(index) else { throw .noSuchFabric(index, existing: existing) }
        let outcome: (NOCStatus, FabricIndex?, String)
        do { outcome = try commissioning.removeFabric(index, subject: .caseSession(fabricIndex: index, node: 0)) } catch
        {
            throw .failed(error.message)
        }
        guard outcome.0 == .ok else { throw .failed(outcome.2) }
    }

    /// Forgets every fabric with its ACL and subscriptions: a commissioning under way is rolled back and an open window
    /// closed first. The node's settings, counters, attestation and the hub's pairing values stay.
    public func resetFabrics() throws(MatterAdministrationError) {
        try? window.close(.reset)
        if commissioning.isFailSafeArmed { commissioning.expireFailSafeNow() }
        for fabric in commissioning.fabrics { try removeFabricLocally(fabric.index) }
    }
}
