// The node's commissioning state, shared by the root node's clusters: the fabric table and ACL, the fail-safe, the
// commissioning breadcrumb and regulatory settings, NodeLabel and Location. One owner behind one lock.
//
// The fail-safe (Matter 1.4 §11.10.7.2) is a snapshot: arming it copies the fabric table and ACL; everything done
// under it — a trusted root, a CSR's key, a NOC and the fabric it makes, ACL changes — changes the live copy only,
// and nothing of it reaches storage until CommissioningComplete. Expiry (on the injected clock, through `expireIfDue`)
// or an ArmFailSafe of 0 seconds restores the snapshot, so a commissioning that stops half-way leaves nothing behind.

import HearthSync

/// What happened that the node's sessions must follow.
public enum CommissioningEvent: Sendable, Equatable {
    /// AddNOC made a fabric; the PASE session that asked is now bound to it.
    case fabricAdded(FabricIndex)
    /// The fail-safe ended with CommissioningComplete on this fabric: it is stored.
    case commissioningCompleted(FabricIndex)
    /// The fail-safe expired: fabrics it added are gone (close their sessions and the PASE session).
    case failSafeExpired(removedFabrics: [FabricIndex])
    /// RemoveFabric: close the fabric's sessions and subscriptions, withdraw its operational advertisement.
    case fabricRemoved(FabricIndex)
}

/// ArmFailSafe's and CommissioningComplete's error codes (CommissioningErrorEnum).
public enum CommissioningError: UInt8, Sendable {
    case ok = 0
    case valueOutsideRange = 1
    case invalidAuthentication = 2
    case noFailSafe = 3
    case busyWithOtherAdmin = 4
}

/// NOCResponse's status codes (NodeOperationalCertStatusEnum).
public enum NOCStatus: UInt8, Sendable {
    case ok = 0
    case invalidPublicKey = 1
    case invalidNodeOpID = 2
    case invalidNOC = 3
    case missingCSR = 4
    case tableFull = 5
    case invalidAdminSubject = 6
    case fabricConflict = 9
    case labelConflict = 10
    case invalidFabricIndex = 11
}

/// The commissioning state of a node.
public final class CommissioningState: Sendable {
    /// How many fabrics the node holds (SupportedFabrics; the specification's minimum is 5).
    public static let supportedFabrics = 5
    /// The longest fail-safe from its first arming (BasicCommissioningInfo.MaxCumulativeFailsafeSeconds).
    public static let maximumCumulativeFailSafeSeconds: Int64 = 900
    /// ACL entries per fabric (AccessControlEntriesPerFabric).
    public static let aclEntriesPerFabric = 4

    struct Table: Equatable {
        var fabrics: [Fabric] = []
        var acl: [ACLEntry] = []
        /// The index the next fabric gets if free; indexes are handed out in turn and not reused soon.
        var nextFabricIndex: FabricIndex = 1
    }

    struct FailSafe {
        var deadline: MatterInstant
        var cumulativeDeadline: MatterInstant
        /// The fabric of the session that armed it (0: a PASE session without a fabric).
        var armedBy: FabricIndex
        var snapshot: Table
        var breadcrumbAtArming: UInt64
        var pendingRoot: [UInt8]?
        var pendingKey: (any OperationalKeyPair)?
        var pendingKeyForUpdate = false
        var addedFabric: FabricIndex?
        var updatedFabric: FabricIndex?
    }

    /// What BasicInformation and GeneralCommissioning let an administrator set, kept across restarts.
    public struct Settings: Sendable, Equatable {
        public var nodeLabel = ""
        public var location = "XX"
        public var regulatoryConfig: UInt8 = 0

        public init() {}
    }

    struct Inner {
        var table = Table()
        var failSafe: FailSafe?
        var breadcrumb: UInt64 = 0
        var settings = Settings()
        var rebootCount: UInt16 = 0
        var events: [CommissioningEvent] = []
    }

    private let inner: Locked<Inner>
    private let storage: any NodeStorage
    let keys: any OperationalKeyFactory
    let verifier: any OperationalCertificateVerifier
    let attestation: any DeviceAttestationCredentials
    /// Told which root-node cluster changed, so its DataVersion moves.
    private let changes: Locked<(@Sendable (ClusterID) -> Void)?> = Locked(nil)

    /// Loads the state from `storage` and counts this start in RebootCount.
    public init(storage: any NodeStorage, keys: any OperationalKeyFactory, verifier: any OperationalCertificateVerifier,
                attestation: any DeviceAttestationCredentials) throws(StorageError) {
        self.storage = storage
        self.keys = keys
        self.verifier = verifier
        self.attestation = attestation
        var state = Inner()
        if let bytes = try storage.load(.fabrics) { state.table = try Self.decodeTable(bytes) }
        if let bytes = try storage.load(.nodeSettings) { state.settings = try Self.decodeSettings(bytes) }
        if let bytes = try storage.load(.counters) { state.rebootCount = try Self.decodeCounters(bytes) }
        state.rebootCount &+= 1
        try storage.store(
            .counters, TLVElement.structure { TLVElement(context: 0, .uint(state.rebootCount)) }.encoded())
        self.inner = Locked(state)
    }

    /// Told which fabrics went away (RemoveFabric, a fail-safe's rollback), so their subscriptions end.
    private let removals: Locked<(@Sendable ([FabricIndex]) -> Void)?> = Locked(nil)

    /// Sets who hears of fabrics that went away.
    public func onFabricsRemoved(_ handler: @escaping @Sendable ([FabricIndex]) -> Void) {
        removals.withLock { $0 = handler }
    }

    private func removed(_ fabrics: [FabricIndex]) {
        guard !fabrics.isEmpty, let handler = removals.withLock({ $0 }) else { return }
        handler(fabrics)
    }

    /// Sets who hears of changed clusters (the data model's `markChanged` on the root endpoint).
    public func onChange(_ handler: @escaping @Sendable (ClusterID) -> Void) { changes.withLock { $0 = handler } }

    private func changed(_ clusters: ClusterID...) {
        guard let handler = changes.withLock({ $0 }) else { return }
        for cluster in clusters { handler(cluster) }
    }

    /// The events since the last call, emptied.
    public func takeEvents() -> [CommissioningEvent] {
        inner.withLock { state in
            defer { state.events = [] }
            return state.events
        }
    }

    // MARK: Reading

    public var fabrics: [Fabric] { inner.withLock { $0.table.fabrics } }
    public var acl: [ACLEntry] { inner.withLock { $0.table.acl } }
    public var breadcrumb: UInt64 { inner.withLock { $0.breadcrumb } }
    public var settings: Settings { inner.withLock { $0.settings } }
    public var rebootCount: UInt16 { inner.withLock { $0.rebootCount } }
    public var isFailSafeArmed: Bool { inner.withLock { $0.failSafe != nil } }
    /// Whether the node is commissioned (holds a fabric that is not only under a fail-safe).
    public var isCommissioned: Bool {
        inner.withLock { state in
            let pending = state.failSafe?.addedFabric
            return state.table.fabrics.contains { $0.index != pending }
        }
    }
    var pendingRootCertificate: [UInt8]? { inner.withLock { $0.failSafe?.pendingRoot } }

    /// When the fail-safe expires, if armed: the node calls `expireIfDue` then.
    public var nextDeadline: MatterInstant? { inner.withLock { $0.failSafe?.deadline } }

    // MARK: Fail-safe

    /// Rolls back an expired fail-safe. Returns whether it did.
    @discardableResult
    public func expireIfDue(now: MatterInstant) -> Bool {
        let gone = inner.withLock { state -> [FabricIndex]? in
            guard let failSafe = state.failSafe, now >= failSafe.deadline else { return nil }
            return Self.rollBack(&state)
        }
        guard let gone else { return false }
        changed(0x0030, 0x003E, 0x001F, 0x003F)
        removed(gone)
        return true
    }

    /// Restores the snapshot; returns the fabrics that went with it.
    @discardableResult
    private static func rollBack(_ state: inout Inner) -> [FabricIndex] {
        guard let failSafe = state.failSafe else { return [] }
        let removed = state.table.fabrics.map(\.index).filter { index in
            !failSafe.snapshot.fabrics.contains { $0.index == index }
        }
        state.table = failSafe.snapshot
        state.breadcrumb = 0
        state.failSafe = nil
        state.events.append(.failSafeExpired(removedFabrics: removed))
        return removed
    }

    func armFailSafe(seconds: UInt16, breadcrumb: UInt64, subject: SubjectDescriptor,
                     now: MatterInstant) -> CommissioningError {
        var gone: [FabricIndex] = []
        let result = inner.withLock { state -> CommissioningError in
            if var failSafe = state.failSafe {
                let sameAdmin = subject.fabricIndex == failSafe.armedBy
                    || (subject.fabricIndex != 0 && subject.fabricIndex == failSafe.addedFabric)
                    || (subject.authMode == .pase && failSafe.armedBy == 0)
                guard sameAdmin else { return .busyWithOtherAdmin }
                if seconds == 0 {
                    gone = Self.rollBack(&state)
                    return .ok
                }
                failSafe.deadline = min(now + Int64(seconds) * 1000, failSafe.cumulativeDeadline)
                state.failSafe = failSafe
                state.breadcrumb = breadcrumb
                return .ok
            }
            if seconds == 0 {
                state.breadcrumb = breadcrumb
                return .ok
            }
            if subject.authMode == .case && subject.fabricIndex == 0 { return .invalidAuthentication }
            let cumulative = now + Self.maximumCumulativeFailSafeSeconds * 1000
            state.failSafe = FailSafe(
                deadline: min(now + Int64(seconds) * 1000, cumulative), cumulativeDeadline: cumulative,
                armedBy: subject.fabricIndex, snapshot: state.table,
                breadcrumbAtArming: state.breadcrumb)
            state.breadcrumb = breadcrumb
            return .ok
        }
        changed(0x0030, 0x003E, 0x001F)
        removed(gone)
        return result
    }

    func commissioningComplete(subject: SubjectDescriptor) -> (CommissioningError, String) {
        let outcome = inner.withLock { state -> (CommissioningError, String, Table?) in
            guard let failSafe = state.failSafe else { return (.noFailSafe, "the fail-safe is not armed", nil) }
            guard subject.authMode == .case else {
                return (.invalidAuthentication, "CommissioningComplete must come over CASE", nil)
            }
            let fabric = failSafe.addedFabric ?? failSafe.updatedFabric ?? failSafe.armedBy
            guard subject.fabricIndex == fabric else {
                return (.invalidAuthentication, "the fail-safe belongs to fabric \(fabric)", nil)
            }
            return (.ok, "", state.table)
        }
        guard outcome.0 == .ok, let table = outcome.2 else { return (outcome.0, outcome.1) }
        do {
            try storage.store(.fabrics, Self.encodeTable(table))
        } catch {
            return (.valueOutsideRange, "the fabric could not be stored: \(error)")
        }
        inner.withLock { state in
            state.failSafe = nil
            state.breadcrumb = 0
            state.events.append(.commissioningCompleted(subject.fabricIndex))
        }
        changed(0x0030)
        return (.ok, "")
    }

    func setRegulatoryConfig(_ config: UInt8, breadcrumb: UInt64) throws(IMError) {
        let settings = inner.withLock { state -> Settings in
            state.settings.regulatoryConfig = config
            state.breadcrumb = breadcrumb
            return state.settings
        }
        try persist(settings)
        changed(0x0030)
    }

    func setBreadcrumb(_ value: UInt64) {
        inner.withLock { $0.breadcrumb = value }
    }

    // MARK: Settings

    func updateSettings(_ change: (inout Settings) -> Void) throws(IMError) {
        var settings = inner.withLock { $0.settings }
        change(&settings)
        try persist(settings)
        inner.withLock { $0.settings = settings }
    }

    private func persist(_ settings: Settings) throws(IMError) {
        let bytes = TLVElement.structure {
            TLVElement(context: 0, .utf8(settings.nodeLabel))
            TLVElement(context: 1, .utf8(settings.location))
            TLVElement(context: 2, .uint(settings.regulatoryConfig))
        }.encoded()
        do { try storage.store(.nodeSettings, bytes) } catch {
            throw IMError(.failure, "the node's settings could not be stored: \(error)")
        }
    }

    // MARK: Operational credentials

    func addTrustedRoot(_ certificate: [UInt8]) throws(IMError) {
        try inner.withLock { (state) throws(IMError) in
            guard state.failSafe != nil else {
                throw IMError(.failsafeRequired, "AddTrustedRootCertificate needs the fail-safe armed")
            }
            if state.failSafe?.pendingRoot != nil {
                throw IMError(.constraintError, "a trusted root was already added under this fail-safe")
            }
            if state.failSafe?.addedFabric != nil || state.failSafe?.updatedFabric != nil {
                throw IMError(.constraintError, "a NOC was already added or updated under this fail-safe")
            }
            do { try verifier.checkRoot(certificate) } catch {
                throw IMError(.invalidCommand, "the root certificate is not valid: \(error)")
            }
            state.failSafe?.pendingRoot = certificate
        }
        changed(0x003E)
    }

    /// A CSRRequest: makes the pending operational key and returns it.
    func makeOperationalKey(forUpdate: Bool, subject: SubjectDescriptor) throws(IMError) -> any OperationalKeyPair {
        try inner.withLock { (state) throws(IMError) in
            guard state.failSafe != nil else {
                throw IMError(.failsafeRequired, "CSRRequest needs the fail-safe armed")
            }
            if state.failSafe?.addedFabric != nil || state.failSafe?.updatedFabric != nil {
                throw IMError(.constraintError, "a NOC was already added or updated under this fail-safe")
            }
            if forUpdate && subject.authMode != .case {
                throw IMError(.invalidCommand, "a CSR for UpdateNOC must be asked over CASE")
            }
            let key: any OperationalKeyPair
            do { key = try keys.makeKey() } catch {
                throw IMError(.failure, "no operational key could be made: \(error)")
            }
            state.failSafe?.pendingKey = key
            state.failSafe?.pendingKeyForUpdate = forUpdate
            return key
        }
    }

    func addNOC(noc: [UInt8], icac: [UInt8]?, ipk: [UInt8], caseAdminSubject: UInt64, adminVendorID: UInt16,
                subject: SubjectDescriptor) throws(IMError) -> (NOCStatus, FabricIndex?, String) {
        let outcome = try inner.withLock { (state) throws(IMError) -> (NOCStatus, FabricIndex?, String) in
            guard let failSafe = state.failSafe else {
                throw IMError(.failsafeRequired, "AddNOC needs the fail-safe armed")
            }
            if failSafe.addedFabric != nil || failSafe.updatedFabric != nil {
                throw IMError(.constraintError, "a NOC was already added or updated under this fail-safe")
            }
            guard let key = failSafe.pendingKey, !failSafe.pendingKeyForUpdate else {
                return (.missingCSR, nil, "no CSRRequest for AddNOC came under this fail-safe")
            }
            guard let root = failSafe.pendingRoot else {
                return (.invalidNOC, nil, "no trusted root was added under this fail-safe")
            }
            guard state.table.fabrics.count < Self.supportedFabrics else {
                return (.tableFull, nil, "the node holds \(Self.supportedFabrics) fabrics already")
            }
            guard ipk.count == 16 else { throw IMError(.invalidCommand, "the IPK has \(ipk.count) bytes, not 16") }
            let identity: OperationalCertificateIdentity
            do { identity = try verifier.verifyChain(noc: noc, icac: icac, root: root) } catch {
                return (.invalidNOC, nil, "the NOC chain does not verify: \(error)")
            }
            guard identity.publicKey == key.publicKey else {
                return (.invalidPublicKey, nil, "the NOC's public key is not the CSR's")
            }
            if state.table.fabrics.contains(where: {
                $0.identity.rootPublicKey == identity.rootPublicKey && $0.identity.fabricID == identity.fabricID
            }) {
                return (.fabricConflict, nil, "the node is already on fabric 0x\(String(identity.fabricID, radix: 16))")
            }
            let admin = ACLEntry(privilege: .administer, authMode: .case, subjects: [caseAdminSubject], fabricIndex: 1)
            guard admin.problem == nil else {
                return (
                    .invalidAdminSubject, nil,
                    "CaseAdminSubject 0x\(String(caseAdminSubject, radix: 16)) is not a node id or CAT")
            }
            let index = Self.allocateIndex(&state.table)
            state.table.fabrics.append(Fabric(
                index: index, identity: identity, vendorID: adminVendorID, label: "", rootCertificate: root,
                intermediateCertificate: icac, operationalCertificate: noc, operationalKey: key.serialized,
                identityProtectionKey: ipk))
            state.table.acl.append(ACLEntry(privilege: .administer, authMode: .case, subjects: [caseAdminSubject],
                                            fabricIndex: index))
            state.failSafe?.addedFabric = index
            state.events.append(.fabricAdded(index))
            return (.ok, index, "")
        }
        if outcome.0 == .ok { changed(0x003E, 0x001F, 0x003F) }
        return outcome
    }

    func updateNOC(noc: [UInt8], icac: [UInt8]?, subject: SubjectDescriptor) throws(IMError) -> (
        NOCStatus, FabricIndex?, String
    ) {
        let outcome = try inner.withLock { (state) throws(IMError) -> (NOCStatus, FabricIndex?, String) in
            guard let failSafe = state.failSafe else {
                throw IMError(.failsafeRequired, "UpdateNOC needs the fail-safe armed")
            }
            guard subject.authMode == .case, subject.fabricIndex != 0,
                  let position = state.table.fabrics.firstIndex(where: { $0.index == subject.fabricIndex }) else {
                throw IMError(.unsupportedAccess, "UpdateNOC must come over CASE on the fabric it updates")
            }
            if failSafe.addedFabric != nil || failSafe.updatedFabric != nil || failSafe.pendingRoot != nil {
                throw IMError(.constraintError, "a root or NOC was already added or updated under this fail-safe")
            }
            guard let key = failSafe.pendingKey, failSafe.pendingKeyForUpdate else {
                return (.missingCSR, nil, "no CSRRequest for UpdateNOC came under this fail-safe")
            }
            var fabric = state.table.fabrics[position]
            let identity: OperationalCertificateIdentity
            do {
                identity = try verifier.verifyChain(noc: noc, icac: icac, root: fabric.rootCertificate)
            } catch {
                return (.invalidNOC, nil, "the NOC chain does not verify: \(error)")
            }
            guard identity.publicKey == key.publicKey else {
                return (.invalidPublicKey, nil, "the NOC's public key is not the CSR's")
            }
            guard identity.fabricID == fabric.identity.fabricID else {
                return (.invalidNOC, nil, "the NOC is for another fabric")
            }
            fabric.identity = identity
            fabric.operationalCertificate = noc
            fabric.intermediateCertificate = icac
            fabric.operationalKey = key.serialized
            state.table.fabrics[position] = fabric
            state.failSafe?.updatedFabric = fabric.index
            return (.ok, fabric.index, "")
        }
        if outcome.0 == .ok { changed(0x003E) }
        return outcome
    }

    func updateFabricLabel(_ label: String, subject: SubjectDescriptor) throws(IMError) -> (
        NOCStatus, FabricIndex?, String
    ) {
        guard label.utf8.count <= 32 else { throw IMError(.constraintError, "a fabric label holds at most 32 bytes") }
        return try mutateTable(subject: subject) { (table) throws(IMError) -> (NOCStatus, FabricIndex?, String) in
            guard let position = table.fabrics.firstIndex(where: { $0.index == subject.fabricIndex }) else {
                return (.invalidFabricIndex, nil, "the session has no fabric")
            }
            if !label.isEmpty && table.fabrics.contains(where: { $0.index != subject.fabricIndex && $0.label == label })
            {
                return (.labelConflict, nil, "another fabric is labelled \"\(label)\"")
            }
            table.fabrics[position].label = label
            return (.ok, subject.fabricIndex, "")
        }
    }

    func removeFabric(_ index: FabricIndex, subject: SubjectDescriptor) throws(IMError) -> (
        NOCStatus, FabricIndex?, String
    ) {
        let outcome = try mutateTable(subject: subject) {
            (table) throws(IMError) -> (NOCStatus, FabricIndex?, String) in
            guard table.fabrics.contains(where: { $0.index == index }) else {
                return (.invalidFabricIndex, nil, "no fabric \(index)")
            }
            table.fabrics.removeAll { $0.index == index }
            table.acl.removeAll { $0.fabricIndex == index }
            return (.ok, index, "")
        }
        if outcome.0 == .ok {
            inner.withLock { $0.events.append(.fabricRemoved(index)) }
            changed(0x001F, 0x003F)
            removed([index])
        }
        return outcome
    }

    /// Replaces the accessing fabric's ACL entries.
    func replaceACL(_ entries: [ACLEntry], subject: SubjectDescriptor) throws(IMError) {
        guard subject.fabricIndex != 0 else {
            throw IMError(.unsupportedAccess, "the ACL is written from a fabric's session")
        }
        guard entries.count <= Self.aclEntriesPerFabric else {
            throw IMError(.resourceExhausted, "a fabric holds at most \(Self.aclEntriesPerFabric) ACL entries")
        }
        for entry in entries {
            if let problem = entry.problem { throw IMError(.constraintError, "ACL entry: \(problem)") }
        }
        let _: Void = try mutateTable(subject: subject) { (table) throws(IMError) in
            table.acl.removeAll { $0.fabricIndex == subject.fabricIndex }
            table.acl.append(contentsOf: entries.map { entry in
                var entry = entry
                entry.fabricIndex = subject.fabricIndex
                return entry
            })
        }
    }

    /// Changes the table; stored at once outside a fail-safe, kept for CommissioningComplete under one.
    private func mutateTable<T>(subject: SubjectDescriptor, _ change: (inout Table) throws(IMError) -> T)
        throws(IMError) -> T
    {
        try inner.withLock { (state) throws(IMError) -> T in
            var table = state.table
            let result = try change(&table)
            if table != state.table && state.failSafe == nil {
                do { try storage.store(.fabrics, Self.encodeTable(table)) } catch {
                    throw IMError(.failure, "the fabric table could not be stored: \(error)")
                }
            }
            state.table = table
            return result
        }
    }

    private static func allocateIndex(_ table: inout Table) -> FabricIndex {
        var candidate = table.nextFabricIndex == 0 ? 1 : table.nextFabricIndex
        while table.fabrics.contains(where: { $0.index == candidate }) {
            candidate = candidate >= 254 ? 1 : candidate + 1
        }
        table.nextFabricIndex = candidate >= 254 ? 1 : candidate + 1
        return candidate
    }

    // MARK: Storage encoding

    static func encodeTable(_ table: Table) -> [UInt8] {
        TLVElement.structure {
            TLVElement(context: 0, .uint(UInt8(1)))
            TLVElement.array(tag: .context(1)) { table.fabrics.map { $0.encoded() } }
            TLVElement.array(tag: .context(2)) { table.acl.map { $0.encoded() } }
            TLVElement(context: 3, .uint(table.nextFabricIndex))
        }.encoded()
    }

    static func decodeTable(_ bytes: [UInt8]) throws(StorageError) -> Table {
        func fail(_ message: String) -> StorageError { StorageError(key: .fabrics, message) }
        let element: TLVElement
        do { element = try TLVElement(decoding: bytes) } catch { throw fail("not TLV: \(error)") }
        var table = Table()
        do {
            guard try element.field(0).unsigned(UInt8.self) == 1 else { throw fail("unknown version") }
            for fabric in try element.field(1).array() { table.fabrics.append(try Fabric(decoding: fabric)) }
            table.nextFabricIndex = try element.field(3).unsigned()
        } catch let error as TLVFieldError {
            throw fail("\(error)")
        } catch {
            throw error as! StorageError
        }
        guard let entries = element[context: 2]?.arrayMembers else { throw fail("no ACL") }
        for entry in entries {
            do { table.acl.append(try ACLEntry(decoding: entry, fabricIndex: nil)) } catch {
                throw fail("ACL entry: \(error)")
            }
        }
        return table
    }

    static func decodeSettings(_ bytes: [UInt8]) throws(StorageError) -> Settings {
        do {
            let element = try TLVElement(decoding: bytes)
            var settings = Settings()
            settings.nodeLabel = try element.field(0).string()
            settings.location = try element.field(1).string()
            settings.regulatoryConfig = try element.field(2).unsigned()
            return settings
        } catch {
            throw StorageError(key: .nodeSettings, "\(error)")
        }
    }

    static func decodeCounters(_ bytes: [UInt8]) throws(StorageError) -> UInt16 {
        do { return try TLVElement(decoding: bytes).field(0).unsigned() } catch {
            throw StorageError(key: .counters, "\(error)")
        }
    }
}
