// Who may do what (Matter 1.4 §6.6): privileges, the subject of a request as its session describes it, Access
// Control List entries and the check the Interaction Model makes before every read, write and invoke.

/// A privilege; each one grants those below it (Administer grants every other, ProxyView grants View).
public enum Privilege: UInt8, Sendable, Comparable, CustomStringConvertible {
    case view = 1
    case proxyView = 2
    case operate = 3
    case manage = 4
    case administer = 5

    public static func < (a: Privilege, b: Privilege) -> Bool { a.rawValue < b.rawValue }

    /// Whether holding `self` grants `required`: ProxyView sits beside Operate and Manage, not below them.
    public func grants(_ required: Privilege) -> Bool {
        switch (self, required) {
        case (.administer, _): true
        case (.proxyView, .view), (.proxyView, .proxyView): true
        case (.proxyView, _): false
        case (_, .proxyView): false
        default: self >= required
        }
    }

    public var description: String {
        switch self {
        case .view: "View"
        case .proxyView: "ProxyView"
        case .operate: "Operate"
        case .manage: "Manage"
        case .administer: "Administer"
        }
    }
}

/// How a session authenticated its peer (AccessControlEntryAuthModeEnum).
public enum AuthMode: UInt8, Sendable, Equatable {
    case pase = 1
    case `case` = 2
    case group = 3
}

/// The subject of a request, as the secure session it arrived on describes it.
public struct SubjectDescriptor: Sendable, Equatable {
    public var authMode: AuthMode
    /// The session's fabric; 0 for a PASE session before AddNOC (no fabric yet).
    public var fabricIndex: FabricIndex
    /// The peer's operational node id (CASE) or group id (group); 0 for PASE.
    public var subject: NodeID
    /// The CASE Authenticated Tags of the peer's NOC.
    public var cats: [UInt32]
    /// The attestation challenge of the session (from its key derivation), which AttestationRequest and
    /// CSRRequest sign over; empty when the session has none.
    public var attestationChallenge: [UInt8]

    public init(authMode: AuthMode, fabricIndex: FabricIndex, subject: NodeID, cats: [UInt32] = [],
                attestationChallenge: [UInt8] = []) {
        self.authMode = authMode
        self.fabricIndex = fabricIndex
        self.subject = subject
        self.cats = cats
        self.attestationChallenge = attestationChallenge
    }

    /// A PASE session (commissioning), bound to `fabricIndex` once AddNOC made one.
    public static func pase(fabricIndex: FabricIndex = 0, attestationChallenge: [UInt8] = []) -> SubjectDescriptor {
        SubjectDescriptor(
            authMode: .pase, fabricIndex: fabricIndex, subject: 0, attestationChallenge: attestationChallenge)
    }

    /// A CASE session with `node` on `fabricIndex`.
    public static func caseSession(fabricIndex: FabricIndex, node: NodeID, cats: [UInt32] = [],
                                   attestationChallenge: [UInt8] = []) -> SubjectDescriptor {
        SubjectDescriptor(authMode: .case, fabricIndex: fabricIndex, subject: node, cats: cats,
                          attestationChallenge: attestationChallenge)
    }
}

/// One target of an ACL entry: any of cluster, endpoint and device type; nil is "any".
public struct ACLTarget: Sendable, Hashable {
    public var cluster: ClusterID?
    public var endpoint: EndpointID?
    public var deviceType: UInt32?

    public init(cluster: ClusterID? = nil, endpoint: EndpointID? = nil, deviceType: UInt32? = nil) {
        self.cluster = cluster
        self.endpoint = endpoint
        self.deviceType = deviceType
    }
}

/// An Access Control List entry (AccessControlEntryStruct), owned by one fabric.
public struct ACLEntry: Sendable, Hashable {
    public var privilege: Privilege
    public var authMode: AuthMode
    /// Node ids, CASE Authenticated Tags (0xFFFF_FFFD_xxxx_yyyy) or group ids; empty grants every subject.
    public var subjects: [UInt64]
    /// Empty grants every target.
    public var targets: [ACLTarget]
    public var fabricIndex: FabricIndex

    public init(privilege: Privilege, authMode: AuthMode, subjects: [UInt64], targets: [ACLTarget] = [],
                fabricIndex: FabricIndex) {
        self.privilege = privilege
        self.authMode = authMode
        self.subjects = subjects
        self.targets = targets
        self.fabricIndex = fabricIndex
    }

    /// Why an entry is not valid (§9.10.5.3), or nil when it is.
    public var problem: String? {
        if authMode == .pase { return "an entry may not name PASE as its authentication mode" }
        if authMode == .group && privilege == .administer { return "a group may not be granted Administer" }
        if subjects.count > 4 { return "an entry holds at most 4 subjects" }
        if targets.count > 3 { return "an entry holds at most 3 targets" }
        for subject in subjects {
            switch authMode {
            case .case:
                let isOperational = subject >= 1 && subject <= 0xFFFF_FFEF_FFFF_FFFF
                let isCAT = subject >> 32 == 0xFFFF_FFFD && subject & 0xFFFF != 0
                if !isOperational && !isCAT { return "subject 0x\(String(subject, radix: 16)) is not a node id or CAT" }
            case .group:
                if subject == 0 || subject > 0xFFFF { return "subject \(subject) is not a group id" }
            case .pase: break
            }
        }
        for target in targets {
            if target.cluster == nil && target.endpoint == nil && target.deviceType == nil {
                return "a target must name a cluster, an endpoint or a device type"
            }
            if target.endpoint != nil && target.deviceType != nil {
                return "a target may not name both an endpoint and a device type"
            }
        }
        return nil
    }

    func matches(_ subject: SubjectDescriptor) -> Bool {
        guard fabricIndex == subject.fabricIndex, authMode == subject.authMode else { return false }
        if subjects.isEmpty { return true }
        for granted in subjects {
            if granted == subject.subject { return true }
            // A CAT subject matches a peer holding that tag id at the same or a later version.
            if authMode == .case, granted >> 32 == 0xFFFF_FFFD {
                let id = UInt16(truncatingIfNeeded: granted >> 16), version = UInt16(truncatingIfNeeded: granted)
                if subject.cats.contains(where: { UInt16($0 >> 16) == id && UInt16($0 & 0xFFFF) >= version }) {
                    return true
                }
            }
        }
        return false
    }

    func covers(_ path: ConcreteClusterPath, deviceTypes: [UInt32]) -> Bool {
        if targets.isEmpty { return true }
        return targets.contains { target in
            (target.cluster == nil || target.cluster == path.cluster)
                && (target.endpoint == nil || target.endpoint == path.endpoint)
                && (target.deviceType.map { deviceTypes.contains($0) } ?? true)
        }
    }
}

/// The access check: whether `subject` holds `required` on a cluster instance, given the node's ACL.
///
/// A PASE session is the commissioner's: it holds Administer on everything, without an entry (§6.6.2.9).
public func accessGranted(to subject: SubjectDescriptor, required: Privilege, on path: ConcreteClusterPath,
                          deviceTypes: [UInt32], acl: [ACLEntry]) -> Bool {
    if subject.authMode == .pase { return true }
    guard subject.fabricIndex != 0 else { return false }
    return acl.contains { entry in
        entry.privilege.grants(required) && entry.matches(subject) && entry.covers(path, deviceTypes: deviceTypes)
    }
}
