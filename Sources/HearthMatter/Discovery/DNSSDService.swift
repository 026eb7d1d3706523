// A DNS-SD service (RFC 6763) as the responder advertises it, and the records it stands for; and the two services a
// Matter node advertises (Matter 1.4 §4.3): commissionable `_matterc._udp` and operational `_matter._tcp`.

/// One service instance: `<instance>.<type>.local` with its SRV (port on the responder's host), its TXT entries and
/// the subtypes it can be browsed by (`_L3840._sub._matterc._udp.local`).
public struct DNSSDService: Sendable, Hashable, CustomStringConvertible {
    /// The instance's one label.
    public var instance: String
    /// Service and protocol: `_matterc._udp`.
    public var type: String
    /// Subtype labels, each without `._sub`: `_L3840`.
    public var subtypes: [String]
    public var port: UInt16
    /// Entries of the TXT record, `key=value` or `key`.
    public var txt: [String]

    public init(instance: String, type: String, subtypes: [String] = [], port: UInt16, txt: [String] = []) {
        self.instance = instance
        self.type = type
        self.subtypes = subtypes
        self.port = port
        self.txt = txt
    }

    /// The service instance's full name; two services with the same one are the same service, updated.
    public func instanceName() throws(DNSMessageError) -> DNSName {
        try DNSName(labels: [Array(instance.utf8)]).appending(typeName())
    }

    public func typeName() throws(DNSMessageError) -> DNSName { try DNSName("\(type).local") }

    public func subtypeNames() throws(DNSMessageError) -> [DNSName] {
        var names: [DNSName] = []
        for subtype in subtypes {
            names.append(try DNSName(labels: [Array(subtype.utf8), Array("_sub".utf8)]).appending(typeName()))
        }
        return names
    }

    /// Throws when a name is not a DNS name (an empty or over-long label), a TXT entry is over 255 bytes, or the type
    /// is not `_service._udp` or `_service._tcp`.
    public func validate() throws(DNSMessageError) {
        _ = try instanceName()
        _ = try subtypeNames()
        let parts = type.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].hasPrefix("_"), parts[1] == "_udp" || parts[1] == "_tcp" else {
            throw .invalidName("service type '\(type)' is not _name._udp or _name._tcp")
        }
        for entry in txt where entry.utf8.count > 255 || entry.isEmpty {
            throw .invalidName("TXT entry of \(entry.utf8.count) bytes")
        }
    }

    public var description: String { "\(instance).\(type)" }
}

/// The names and TXT entries of Matter's DNS-SD services (Matter 1.4 §4.3.1 commissionable, §4.3.2 operational,
/// §4.3.4 the common TXT keys).
public enum MatterServiceNames {
    public static let commissionableType = "_matterc._udp"
    public static let operationalType = "_matter._tcp"
    public static let defaultPort: UInt16 = 5540

    /// A device's commissioning mode, its TXT `CM` value.
    public enum CommissioningMode: Int, Sendable {
        /// Not commissionable (still advertised while, for example, a fabric exists and no window is open).
        case disabled = 0
        /// Open by the device itself, for the passcode it was made with: the state of a hub without a fabric.
        case basic = 1
        /// Opened by an administrator with a new passcode (Enhanced Commissioning Method).
        case enhanced = 2
    }

    /// MRP's session parameters as the TXT keys `SII`, `SAI` (milliseconds) and `SAT` carry them; a key is left out
    /// when nil, and the peer takes the specification's default.
    public struct SessionParameters: Sendable, Hashable {
        public var idleInterval: UInt32?
        public var activeInterval: UInt32?
        public var activeThreshold: UInt16?
        public init(idleInterval: UInt32? = nil, activeInterval: UInt32? = nil, activeThreshold: UInt16? = nil) {
            self.idleInterval = idleInterval
            self.activeInterval = activeInterval
            self.activeThreshold = activeThreshold
        }

        var txt: [String] {
            var entries: [String] = []
            // The specification caps both intervals at one hour.
            if let idleInterval { entries.append("SII=\(min(idleInterval, 3_600_000))") }
            if let activeInterval { entries.append("SAI=\(min(activeInterval, 3_600_000))") }
            if let activeThreshold { entries.append("SAT=\(activeThreshold)") }
            return entries
        }
    }

    /// The short discriminator: the 12-bit discriminator's top 4 bits, what a manual pairing code carries.
    public static func shortDiscriminator(_ discriminator: UInt16) -> UInt16 { (discriminator & 0xFFF) >> 8 }

    /// A commissionable node's instance name: 64 random bits as 16 upper-case hex digits, new at every boot.
    public static func randomCommissionableInstance<G: RandomNumberGenerator>(using generator: inout G) -> String {
        hex(UInt64.random(in: .min ... .max, using: &generator))
    }

    /// `_matterc._udp` for a node that can be commissioned: the subtypes `_L<discriminator>`, `_S<short>`,
    /// `_V<vendor>`, `_T<device type>` and, while a window is open, `_CM`, all in decimal; TXT `D`, `VP`, `CM`, `DT`,
    /// `DN`, the session parameters, `T` and the pairing hint and instruction when given.
    public static func commissionable(
        instance: String, discriminator: UInt16, vendorID: UInt16, productID: UInt16, deviceType: UInt32?,
        deviceName: String?, commissioningMode: CommissioningMode, session: SessionParameters = SessionParameters(),
        tcpSupported: UInt8 = 0, pairingHint: UInt32? = nil, pairingInstruction: String? = nil,
        port: UInt16 = defaultPort
    ) -> DNSSDService {
        let discriminator = discriminator & 0xFFF
        var subtypes = ["_L\(discriminator)", "_S\(shortDiscriminator(discriminator))", "_V\(vendorID)"]
        if let deviceType { subtypes.append("_T\(deviceType)") }
        if commissioningMode != .disabled { subtypes.append("_CM") }
        var txt = ["D=\(discriminator)", "VP=\(vendorID)+\(productID)", "CM=\(commissioningMode.rawValue)"]
        if let deviceType { txt.append("DT=\(deviceType)") }
        // DN is at most 32 bytes; cut at a character boundary.
        if let deviceName, !deviceName.isEmpty { txt.append("DN=\(prefix(deviceName, bytes: 32))") }
        txt += session.txt
        txt.append("T=\(tcpSupported)")
        if let pairingHint { txt.append("PH=\(pairingHint)") }
        if let pairingInstruction, !pairingInstruction.isEmpty {
            txt.append("PI=\(prefix(pairingInstruction, bytes: 128))")
        }
        return DNSSDService(instance: instance, type: commissionableType, subtypes: subtypes, port: port, txt: txt)
    }

    /// `_matter._tcp` for a node on a fabric: instance `<compressed fabric id>-<node id>` in 16 upper-case hex digits
    /// each, subtype `_I<compressed fabric id>`, TXT the session parameters and `T`.
    public static func operational(
        compressedFabricID: UInt64, nodeID: UInt64, session: SessionParameters = SessionParameters(),
        tcpSupported: UInt8 = 0, port: UInt16 = defaultPort
    ) -> DNSSDService {
        DNSSDService(instance: "\(hex(compressedFabricID))-\(hex(nodeID))", type: operationalType,
                     subtypes: ["_I\(hex(compressedFabricID))"], port: port, txt: session.txt + ["T=\(tcpSupported)"])
    }

    /// A host name's label from a MAC address (12 upper-case hex digits), as Matter names hosts.
    public static func hostLabel(macAddress: [UInt8]) -> String {
        macAddress.map { byte in
            let digits = Array("0123456789ABCDEF")
            return String([digits[Int(byte >> 4)], digits[Int(byte & 15)]])
        }.joined()
    }

    /// A random host label (16 upper-case hex digits), for an interface without a MAC address.
    public static func randomHostLabel<G: RandomNumberGenerator>(using generator: inout G) -> String {
        hex(UInt64.random(in: .min ... .max, using: &generator))
    }

    static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }

    private static func prefix(_ text: String, bytes limit: Int) -> String {
        var kept = ""
        var count = 0
        for character in text {
            count += character.utf8.count
            if count > limit { break }
            kept.append(character)
        }
        return kept
    }
}
