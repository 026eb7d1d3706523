// Matter TLV certificate ↔ X.509 DER, as core specification 6.5.x converts them: the TBS rebuilt from TLV must be
// byte-for-byte what the issuer signed, so every choice (string types, time forms, criticality, extension order)
// follows the specification's one encoding.

extension MatterCertificate {
    /// The X.509 TBSCertificate DER the signature covers.
    public var tbsDER: [UInt8] {
        var writer = DERWriter()
        writer.append(tag: DERTag.sequence) { tbs in
            tbs.append(tag: DERTag.contextConstructed(0)) { $0.appendInteger(2) }
            tbs.append(tag: DERTag.integer, contents: serialNumber)
            tbs.append(tag: DERTag.sequence) { $0.append(tag: DERTag.objectIdentifier, contents: OID.ecdsaWithSHA256) }
            issuer.appendDER(to: &tbs)
            tbs.append(tag: DERTag.sequence) { validity in
                MatterTime.appendDER(notBefore, to: &validity)
                MatterTime.appendDER(notAfter, to: &validity)
            }
            subject.appendDER(to: &tbs)
            tbs.append(tag: DERTag.sequence) { spki in
                spki.append(tag: DERTag.sequence) { algorithm in
                    algorithm.append(tag: DERTag.objectIdentifier, contents: OID.ecPublicKey)
                    algorithm.append(tag: DERTag.objectIdentifier, contents: OID.prime256v1)
                }
                spki.append(tag: DERTag.bitString, contents: [0] + publicKey)
            }
            tbs.append(tag: DERTag.contextConstructed(3)) { wrapper in
                wrapper.append(tag: DERTag.sequence) { list in
                    for ext in extensions { ext.appendDER(to: &list) }
                }
            }
        }
        return writer.bytes
    }

    /// The signature as the DER `Ecdsa-Sig-Value` X.509 carries.
    public var signatureDER: [UInt8] { ECDSASignatureDER.encode(raw: signature) }

    /// The whole X.509 certificate in DER.
    public var x509DER: [UInt8] {
        var writer = DERWriter()
        writer.append(tag: DERTag.sequence) { cert in
            cert.appendEncoded(tbsDER)
            cert.append(tag: DERTag.sequence) { $0.append(tag: DERTag.objectIdentifier, contents: OID.ecdsaWithSHA256) }
            cert.append(tag: DERTag.bitString, contents: [0] + signatureDER)
        }
        return writer.bytes
    }

    /// Reads an X.509 DER certificate of Matter's profile; refuses what the TLV form cannot carry exactly.
    public init(x509DER der: [UInt8]) throws(CertificateError) {
        do {
            try self.init(parsingX509: der)
        } catch let error as CertificateError {
            throw error
        } catch {
            throw CertificateError("\(error)")
        }
        // What cannot round-trip would not verify once converted: refuse it here, where the cause is clear.
        guard x509DER == der else { throw CertificateError("X.509 form is not the one Matter's TLV form rebuilds") }
    }

    private init(parsingX509 der: [UInt8]) throws {
        var outer = DERReader(der)
        let certificate = try outer.read(expecting: DERTag.sequence, "Certificate")
        try outer.expectEnd("Certificate")
        var cert = certificate.reader
        let tbs = try cert.read(expecting: DERTag.sequence, "TBSCertificate")
        let algorithm = try cert.read(expecting: DERTag.sequence, "signatureAlgorithm")
        guard
            Array(algorithm.contents) == [DERTag.objectIdentifier, UInt8(OID.ecdsaWithSHA256.count)]
                + OID.ecdsaWithSHA256
        else {
            throw CertificateError("signature algorithm is not ECDSA with SHA-256")
        }
        let signatureBits = try cert.read(expecting: DERTag.bitString, "signatureValue")
        try cert.expectEnd("Certificate")
        guard signatureBits.contents.first == 0 else { throw CertificateError("signature bit string has unused bits") }
        signature = try ECDSASignatureDER.decode(Array(signatureBits.contents.dropFirst()))

        var fields = tbs.reader
        let version = try fields.read(expecting: DERTag.contextConstructed(0), "version")
        guard Array(version.contents) == [DERTag.integer, 1, 2] else {
            throw CertificateError("not an X.509 v3 certificate")
        }
        serialNumber = Array(try fields.read(expecting: DERTag.integer, "serialNumber").contents)
        guard (1...20).contains(serialNumber.count) else {
            throw CertificateError("serial number of \(serialNumber.count) bytes")
        }
        let innerAlgorithm = try fields.read(expecting: DERTag.sequence, "signature")
        guard innerAlgorithm.contents.elementsEqual(algorithm.contents) else {
            throw CertificateError("TBS signature algorithm differs")
        }
        issuer = try DistinguishedName(der: fields.read(expecting: DERTag.sequence, "issuer"))
        var validity = try fields.read(expecting: DERTag.sequence, "validity").reader
        notBefore = try MatterTime.read(from: &validity)
        notAfter = try MatterTime.read(from: &validity)
        try validity.expectEnd("validity")
        subject = try DistinguishedName(der: fields.read(expecting: DERTag.sequence, "subject"))
        var spki = try fields.read(expecting: DERTag.sequence, "subjectPublicKeyInfo").reader
        let keyAlgorithm = try spki.read(expecting: DERTag.sequence, "algorithm")
        var expectedAlgorithm = DERWriter()
        expectedAlgorithm.append(tag: DERTag.objectIdentifier, contents: OID.ecPublicKey)
        expectedAlgorithm.append(tag: DERTag.objectIdentifier, contents: OID.prime256v1)
        guard Array(keyAlgorithm.contents) == expectedAlgorithm.bytes else {
            throw CertificateError("public key is not EC P-256")
        }
        let keyBits = try spki.read(expecting: DERTag.bitString, "subjectPublicKey")
        try spki.expectEnd("subjectPublicKeyInfo")
        guard keyBits.contents.count == 66, keyBits.contents.first == 0, keyBits.contents.dropFirst().first == 0x04
        else {
            throw CertificateError("public key is not an uncompressed P-256 point")
        }
        publicKey = Array(keyBits.contents.dropFirst())
        let wrapper = try fields.read(expecting: DERTag.contextConstructed(3), "extensions")
        try fields.expectEnd("TBSCertificate")
        var wrapperReader = wrapper.reader
        var list = try wrapperReader.read(expecting: DERTag.sequence, "Extensions").reader
        try wrapperReader.expectEnd("extensions")
        extensions = []
        while !list.isAtEnd {
            extensions.append(try CertificateExtension(der: list.read(expecting: DERTag.sequence, "Extension")))
        }
        try checkExtensionsAreDistinct()
    }
}

/// Object identifiers of the profile, as DER contents.
enum OID {
    static let ecdsaWithSHA256: [UInt8] = [0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x04, 0x03, 0x02]
    static let ecPublicKey: [UInt8] = [0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01]
    static let prime256v1: [UInt8] = [0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07]
    static let basicConstraints: [UInt8] = [0x55, 0x1D, 0x13]
    static let keyUsage: [UInt8] = [0x55, 0x1D, 0x0F]
    static let extendedKeyUsage: [UInt8] = [0x55, 0x1D, 0x25]
    static let subjectKeyIdentifier: [UInt8] = [0x55, 0x1D, 0x0E]
    static let authorityKeyIdentifier: [UInt8] = [0x55, 0x1D, 0x23]
    static func keyPurpose(_ n: UInt8) -> [UInt8] { [0x2B, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, n] }
}

extension DistinguishedName {
    func appendDER(to writer: inout DERWriter) {
        writer.append(tag: DERTag.sequence) { rdns in
            for attribute in attributes {
                rdns.append(tag: DERTag.set) { set in
                    set.append(tag: DERTag.sequence) { pair in
                        pair.append(tag: DERTag.objectIdentifier, contents: attribute.kind.oid)
                        switch attribute.value {
                        case .integer(let v):
                            let digits = attribute.kind == .matterCASEAuthenticatedTag ? 8 : 16
                            pair.append(
                                tag: DERTag.utf8String, contents: Array(UpperHex.string(v, digits: digits).utf8))
                        case .string(let s, let printable):
                            let tag = attribute.kind == .domainComponent ? DERTag.ia5String
                                : printable ? DERTag.printableString : DERTag.utf8String
                            pair.append(tag: tag, contents: Array(s.utf8))
                        }
                    }
                }
            }
        }
    }

    init(der element: DERElement) throws {
        var rdns = element.reader
        var attributes: [DNAttribute] = []
        while !rdns.isAtEnd {
            var set = try rdns.read(expecting: DERTag.set, "RelativeDistinguishedName").reader
            var pair = try set.read(expecting: DERTag.sequence, "AttributeTypeAndValue").reader
            try set.expectEnd("RelativeDistinguishedName with more than one attribute")
            let oid = try pair.read(expecting: DERTag.objectIdentifier, "AttributeType")
            let value = try pair.read()
            try pair.expectEnd("AttributeTypeAndValue")
            guard let kind = DNAttribute.Kind(oid: oid.contents) else {
                throw CertificateError("unknown attribute type in a name")
            }
            guard let text = String(validating: value.contents, as: UTF8.self) else {
                throw CertificateError("attribute \(kind) is not valid UTF-8")
            }
            if kind.isMatterInteger {
                let digits = kind == .matterCASEAuthenticatedTag ? 8 : 16
                guard value.tag == DERTag.utf8String, let v = UpperHex.parse(text, digits: digits) else {
                    throw CertificateError("Matter attribute \(kind) is not \(digits) upper-case hex digits")
                }
                attributes.append(.matter(kind, v))
            } else if kind == .domainComponent {
                guard value.tag == DERTag.ia5String else {
                    throw CertificateError("domain component is not an IA5String")
                }
                attributes.append(DNAttribute(kind, .string(text, printable: false)))
            } else {
                guard value.tag == DERTag.utf8String || value.tag == DERTag.printableString else {
                    throw CertificateError("attribute \(kind) is neither UTF8String nor PrintableString")
                }
                attributes.append(DNAttribute(kind, .string(text, printable: value.tag == DERTag.printableString)))
            }
        }
        guard !attributes.isEmpty else { throw CertificateError("empty distinguished name") }
        self.attributes = attributes
    }
}

extension CertificateExtension {
    func appendDER(to writer: inout DERWriter) {
        if case .future(let der) = self {
            writer.appendEncoded(der)
            return
        }
        writer.append(tag: DERTag.sequence) { ext in
            var value = DERWriter()
            switch self {
            case .basicConstraints(let isCA, let pathLength):
                ext.append(tag: DERTag.objectIdentifier, contents: OID.basicConstraints)
                value.append(tag: DERTag.sequence) { constraints in
                    if isCA { constraints.append(tag: DERTag.boolean, contents: [0xFF]) }
                    if let pathLength { constraints.appendInteger(UInt64(pathLength)) }
                }
            case .keyUsage(let usage):
                ext.append(tag: DERTag.objectIdentifier, contents: OID.keyUsage)
                value.append(tag: DERTag.bitString, contents: KeyUsageBits.encode(usage.rawValue))
            case .extendedKeyUsage(let purposes):
                ext.append(tag: DERTag.objectIdentifier, contents: OID.extendedKeyUsage)
                value.append(tag: DERTag.sequence) { list in
                    for purpose in purposes {
                        list.append(tag: DERTag.objectIdentifier, contents: OID.keyPurpose(purpose.rawValue))
                    }
                }
            case .subjectKeyIdentifier(let id):
                ext.append(tag: DERTag.objectIdentifier, contents: OID.subjectKeyIdentifier)
                value.append(tag: DERTag.octetString, contents: id)
            case .authorityKeyIdentifier(let id):
                ext.append(tag: DERTag.objectIdentifier, contents: OID.authorityKeyIdentifier)
                value.append(tag: DERTag.sequence) { $0.append(tag: DERTag.contextPrimitive(0), contents: id) }
            case .future: break
            }
            if isCritical { ext.append(tag: DERTag.boolean, contents: [0xFF]) }
            ext.append(tag: DERTag.octetString, contents: value.bytes)
        }
    }

    /// A future extension's bytes, which the X.509 form carries as they are: one DER `Extension` of an extension
    /// Matter's profile does not name (a known one has its own TLV form, and anything else would not read back).
    static func checkedFuture(_ der: [UInt8]) throws(CertificateError) -> [UInt8] {
        do {
            var outer = DERReader(der)
            let element = try outer.read(expecting: DERTag.sequence, "future extension")
            try outer.expectEnd("future extension")
            guard case .future = try CertificateExtension(der: element) else {
                throw CertificateError("future extension is one Matter's profile names")
            }
        } catch let error as CertificateError {
            throw error
        } catch {
            throw CertificateError("future extension is not a DER Extension: \(error)")
        }
        return der
    }

    /// Basic constraints, key usage and extended key usage are critical in Matter's profile; the key ids are not.
    var isCritical: Bool {
        switch self {
        case .basicConstraints, .keyUsage, .extendedKeyUsage: true
        default: false
        }
    }

    init(der element: DERElement) throws {
        var fields = element.reader
        let oid = Array(try fields.read(expecting: DERTag.objectIdentifier, "extnID").contents)
        var critical = false
        if fields.peekTag == DERTag.boolean { critical = try fields.read().boolean("critical") }
        let value = try fields.read(expecting: DERTag.octetString, "extnValue")
        try fields.expectEnd("Extension")
        var inner = DERReader(value.contents)
        switch oid {
        case OID.basicConstraints:
            var constraints = try inner.read(expecting: DERTag.sequence, "BasicConstraints").reader
            var isCA = false
            if constraints.peekTag == DERTag.boolean {
                isCA = try constraints.read().boolean("cA")
                guard isCA else { throw CertificateError("basic constraints encode the default cA FALSE") }
            }
            var pathLength: UInt8?
            if !constraints.isAtEnd {
                let magnitude = try constraints.read().unsignedIntegerMagnitude("pathLenConstraint")
                guard magnitude.count == 1 else { throw CertificateError("path length constraint above 255") }
                pathLength = magnitude[0]
            }
            try constraints.expectEnd("BasicConstraints")
            self = .basicConstraints(isCA: isCA, pathLength: pathLength)
        case OID.keyUsage:
            let bits = try inner.read(expecting: DERTag.bitString, "KeyUsage")
            self = .keyUsage(KeyUsage(rawValue: try KeyUsageBits.decode(Array(bits.contents))))
        case OID.extendedKeyUsage:
            var list = try inner.read(expecting: DERTag.sequence, "ExtKeyUsageSyntax").reader
            var purposes: [KeyPurpose] = []
            while !list.isAtEnd {
                let purposeOID = Array(try list.read(expecting: DERTag.objectIdentifier, "KeyPurposeId").contents)
                guard let purpose = KeyPurpose.allCases.first(where: { OID.keyPurpose($0.rawValue) == purposeOID })
                else {
                    throw CertificateError("unknown key purpose")
                }
                purposes.append(purpose)
            }
            guard !purposes.isEmpty else { throw CertificateError("empty extended key usage") }
            self = .extendedKeyUsage(purposes)
        case OID.subjectKeyIdentifier:
            let id = Array(try inner.read(expecting: DERTag.octetString, "SubjectKeyIdentifier").contents)
            guard id.count == 20 else { throw CertificateError("subject key identifier of \(id.count) bytes") }
            self = .subjectKeyIdentifier(id)
        case OID.authorityKeyIdentifier:
            var sequence = try inner.read(expecting: DERTag.sequence, "AuthorityKeyIdentifier").reader
            let id = Array(try sequence.read(expecting: DERTag.contextPrimitive(0), "keyIdentifier").contents)
            try sequence.expectEnd("AuthorityKeyIdentifier")
            guard id.count == 20 else { throw CertificateError("authority key identifier of \(id.count) bytes") }
            self = .authorityKeyIdentifier(id)
        default:
            self = .future(Array(element.encoded))
            return
        }
        try inner.expectEnd("extension value")
        guard critical == isCritical else {
            throw CertificateError("extension criticality differs from Matter's profile")
        }
    }
}

/// X.509 KeyUsage BIT STRING ↔ the TLV bit mask (bit n of the mask is the string's bit n, counted from the first
/// byte's top bit), in DER's shortest form.
enum KeyUsageBits {
    static func encode(_ mask: UInt16) -> [UInt8] {
        guard mask != 0 else { return [0] }
        let highest = 15 - mask.leadingZeroBitCount
        var bytes = [UInt8](repeating: 0, count: highest / 8 + 1)
        for bit in 0...highest where mask & (1 << bit) != 0 { bytes[bit / 8] |= 0x80 >> UInt8(bit % 8) }
        return [UInt8(7 - highest % 8)] + bytes
    }

    static func decode(_ contents: [UInt8]) throws(CertificateError) -> UInt16 {
        guard let unused = contents.first, unused < 8, contents.count <= 3 else {
            throw CertificateError("key usage bits malformed")
        }
        var mask: UInt16 = 0
        for (index, byte) in contents.dropFirst().enumerated() {
            for bit in 0..<8 where byte & (0x80 >> UInt8(bit)) != 0 {
                let position = index * 8 + bit
                guard position < 9 else { throw CertificateError("unknown key usage bit \(position)") }
                mask |= 1 << position
            }
        }
        guard encode(mask) == contents else { throw CertificateError("key usage bits not in DER's shortest form") }
        return mask
    }
}

/// ECDSA signatures: raw r || s ↔ DER `SEQUENCE { INTEGER r, INTEGER s }`.
enum ECDSASignatureDER {
    static func encode(raw: [UInt8]) -> [UInt8] {
        var writer = DERWriter()
        writer.append(tag: DERTag.sequence) { sequence in
            sequence.appendUnsignedInteger(bigEndian: Array(raw.prefix(32)))
            sequence.appendUnsignedInteger(bigEndian: Array(raw.dropFirst(32)))
        }
        return writer.bytes
    }

    static func decode(_ der: [UInt8]) throws -> [UInt8] {
        var outer = DERReader(der)
        var sequence = try outer.read(expecting: DERTag.sequence, "Ecdsa-Sig-Value").reader
        try outer.expectEnd("Ecdsa-Sig-Value")
        var raw: [UInt8] = []
        for name in ["r", "s"] {
            let magnitude = try sequence.read().unsignedIntegerMagnitude(name)
            guard magnitude.count <= 32 else { throw CertificateError("signature \(name) wider than 32 bytes") }
            raw += [UInt8](repeating: 0, count: 32 - magnitude.count) + magnitude
        }
        try sequence.expectEnd("Ecdsa-Sig-Value")
        return raw
    }
}

/// Matter epoch seconds ↔ X.509 times: UTCTime through 2049, GeneralizedTime after; 0 is 99991231235959Z.
public enum MatterTime {
    /// Seconds from the Unix epoch to the Matter epoch (2000-01-01 00:00:00 UTC).
    public static let unixOffset: UInt64 = 946_684_800

    static func appendDER(_ seconds: UInt32, to writer: inout DERWriter) {
        let (year, month, day, hour, minute, second) = seconds == 0
            ? (9999, 12, 31, 23, 59, 59) : calendar(fromMatterSeconds: seconds)
        func two(_ v: Int) -> String { v < 10 ? "0\(v)" : "\(v)" }
        let rest = two(month) + two(day) + two(hour) + two(minute) + two(second) + "Z"
        if year < 2050 {
            writer.append(tag: DERTag.utcTime, contents: Array((two(year % 100) + rest).utf8))
        } else {
            writer.append(tag: DERTag.generalizedTime, contents: Array((String(year) + rest).utf8))
        }
    }

    static func read(from reader: inout DERReader) throws -> UInt32 {
        let element = try reader.read()
        let digits = Array(element.contents)
        let yearDigits: Int
        switch element.tag {
        case DERTag.utcTime: yearDigits = 2
        case DERTag.generalizedTime: yearDigits = 4
        default: throw CertificateError("validity time is neither UTCTime nor GeneralizedTime")
        }
        guard digits.count == yearDigits + 11, digits.last == UInt8(ascii: "Z"),
              digits.dropLast().allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) })
        else { throw CertificateError("validity time is not YYMMDDHHMMSSZ or YYYYMMDDHHMMSSZ") }
        func number(_ start: Int, _ count: Int) -> Int {
            digits[start..<(start + count)].reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
        }
        var year = number(0, yearDigits)
        if yearDigits == 2 { year += year < 50 ? 2000 : 1900 }
        let (month, day) = (number(yearDigits, 2), number(yearDigits + 2, 2))
        let (hour, minute, second) = (number(yearDigits + 4, 2), number(yearDigits + 6, 2), number(yearDigits + 8, 2))
        if (year, month, day, hour, minute, second) == (9999, 12, 31, 23, 59, 59) { return 0 }
        guard (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 60 else {
            throw CertificateError("validity time out of range")
        }
        let days = daysFromCivil(year: year, month: month, day: day) - daysFromCivil(year: 2000, month: 1, day: 1)
        let total = Int64(days) * 86_400 + Int64(hour * 3600 + minute * 60 + second)
        guard let seconds = UInt32(exactly: total), seconds != 0 else {
            throw CertificateError("validity time outside what Matter epoch seconds hold")
        }
        return seconds
    }

    static func calendar(fromMatterSeconds seconds: UInt32) -> (Int, Int, Int, Int, Int, Int) {
        let days = Int(seconds / 86_400) + daysFromCivil(year: 2000, month: 1, day: 1)
        let rest = Int(seconds % 86_400)
        // Days to civil date (proleptic Gregorian), after Howard Hinnant's public-domain algorithm.
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        return (year, month, day, rest / 3600, rest % 3600 / 60, rest % 60)
    }

    /// Days from 1970-01-01 to the civil date.
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}

/// Fixed-width upper-case hexadecimal, as Matter's DN attributes are written in X.509.
enum UpperHex {
    static func string(_ value: UInt64, digits: Int) -> String {
        let alphabet = Array("0123456789ABCDEF")
        return String((0..<digits).reversed().map { alphabet[Int(value >> UInt64(4 * $0) & 0xF)] })
    }

    static func parse(_ text: String, digits: Int) -> UInt64? {
        let utf8 = Array(text.utf8)
        guard utf8.count == digits else { return nil }
        var value: UInt64 = 0
        for c in utf8 {
            let digit: UInt8
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = c - UInt8(ascii: "0")
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = c - UInt8(ascii: "A") + 10
            default: return nil
            }
            value = value << 4 | UInt64(digit)
        }
        return value
    }
}
