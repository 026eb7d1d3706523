/// The fuzz targets: one function per reader of outside input, each taking bytes and checking what the reader
/// promises, not only that it does not crash (docs/reliability.md, "Fuzzing").
///
/// The same functions run under libFuzzer (`scripts/fuzz`, through `hearth-fuzz` built with
/// `-sanitize=fuzzer,address`) and without it, when `swift test` replays the corpus in `Tests/Fuzz/corpus/<target>/`.
/// A broken promise is thrown as a `FuzzFailure`; the libFuzzer entry turns it into a crash so that libFuzzer
/// keeps the input, the replay turns it into a test failure naming the file.
public enum FuzzTarget: String, CaseIterable, Sendable {
    /// HearthJSON's parser and writer against an independent recogniser of RFC 8259 and Hearth's limits.
    case json
    /// Requests on a device's `set` topic (`HubRequest`, value coding) run by the hub against a real `Home`.
    case request
    /// The topic scheme: prefixes, ids, and every topic read (`classify`) and made (`topic(_:)`), both ways.
    case topic
    /// A hub configuration (`hearth.yaml`) through `hearthd check-config`'s path, libyaml underneath.
    case config
    /// A board file (`boards/*.yaml`).
    case board
    /// What peer hubs publish (status, summaries, device documents, responses), as a hub ingests it.
    case peer
    /// The state file (`state.json`), loaded as a hub loads it at start-up.
    case state
    /// The web page's readers: the session cookie, the sign-in form, JSON bodies, request paths.
    case web
    /// HearthCrypto's readers: DER certificates and CSRs, SEC1 points, DER signatures, a SPAKE2+ share, CMS messages.
    case crypto
    /// Matter TLV, the body of every Matter message: the strict reader and the canonical writer.
    case matterTLV = "matter-tlv"
    /// A Matter datagram's message header and payload header, as the UDP transport reads them.
    case matterMessage = "matter-message"
    /// A Multicast DNS packet, read by the DNS codec and answered by the mDNS responder's logic.
    case mdnsMessage = "mdns-message"
    /// Matter operational certificates, in TLV and X.509 (`MatterCertificate`).
    case matterCertificate = "matter-certificate"
    /// PASE and CASE responders fed a commissioner's or peer's messages.
    case matterSecureChannel = "matter-secure-channel"
    /// Matter Interaction Model messages (opcode byte, TLV payload) answered by a node core.
    case matterIM = "matter-im"
    /// A Matter command's fields as the bridge decodes them for the engine, and back.
    case matterBridge = "matter-bridge"
    /// Peer hubs' status, summaries and documents as the Matter bridge of a hub bridging the whole home shows them.
    case homeBridge = "home-bridge"
    /// A backup archive uploaded for a restore (a ustar tar of the hub's known files).
    case backupArchive = "backup-archive"
    /// A request line on the hub's Matter control socket (`hearthd matter fabrics`, `open-window`, `remove`, `reset`).
    case matterControl = "matter-control"
    /// PASE with one message (PBKDFParamRequest, Pake1, Pake3) the input's, the others a genuine commissioner's.
    case matterPASE = "matter-pase"
    /// CASE with one message (Sigma1, a resumption's Sigma1, Sigma3) the input's, the others a genuine controller's.
    case matterCASE = "matter-case"
    /// Interaction Model requests in sequence on one exchange of a commissioned node, from three kinds of peer.
    case matterIMExchange = "matter-im-exchange"

    /// Runs the target on one input; throws the first broken promise.
    public func run(_ bytes: [UInt8]) throws(FuzzFailure) {
        switch self {
        case .json: try JSONTarget.run(bytes)
        case .request: try RequestTarget.run(bytes)
        case .topic: try TopicTarget.run(bytes)
        case .config: try ConfigTarget.run(bytes)
        case .board: try BoardTarget.run(bytes)
        case .peer: try PeerTarget.run(bytes)
        case .state: try StateTarget.run(bytes)
        case .web: try WebTarget.run(bytes)
        case .crypto: try CryptoTarget.run(bytes)
        case .matterTLV: try MatterTLVTarget.run(bytes)
        case .matterMessage: try MatterMessageTarget.run(bytes)
        case .mdnsMessage: try MDNSMessageTarget.run(bytes)
        case .matterCertificate: try MatterCertificateTarget.run(bytes)
        case .matterSecureChannel: try MatterSecureChannelTarget.run(bytes)
        case .matterIM: try MatterIMTarget.run(bytes)
        case .matterBridge: try MatterBridgeTarget.run(bytes)
        case .homeBridge: try HomeBridgeTarget.run(bytes)
        case .backupArchive: try BackupArchiveTarget.run(bytes)
        case .matterControl: try MatterControlTarget.run(bytes)
        case .matterPASE: try MatterPASETarget.run(bytes)
        case .matterCASE: try MatterCASETarget.run(bytes)
        case .matterIMExchange: try MatterIMExchangeTarget.run(bytes)
        }
    }
}

/// A promise a reader broke on some input.
public struct FuzzFailure: Error, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// Fails with `message` unless `condition` holds.
func require(_ condition: Bool, _ message: @autoclosure () -> String) throws(FuzzFailure) {
    if !condition { throw FuzzFailure(message()) }
}

/// Bytes as text for a failure message: valid UTF-8 as it is, anything else escaped, cut at 300 bytes.
func shown(_ bytes: some Collection<UInt8>) -> String {
    var out = ""
    for b in bytes.prefix(300) {
        if b >= 0x20 && b < 0x7F { out.unicodeScalars.append(Unicode.Scalar(b)) } else { out += "\\x" + hex(b) }
    }
    return bytes.count > 300 ? out + "…" : out
}

func shown(_ text: String) -> String { shown(Array(text.utf8)) }

private func hex(_ b: UInt8) -> String {
    let digits = Array("0123456789abcdef")
    return String([digits[Int(b >> 4)], digits[Int(b & 15)]])
}

/// The input's lines (split at `\n`), the way the line-oriented targets (`request`, `peer`) read it. At most
/// `limit` lines: more only repeat what fewer can reach, and slow the fuzzer.
func lines(_ bytes: [UInt8], limit: Int = 16) -> [ArraySlice<UInt8>] {
    Array(bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true).prefix(limit))
}

/// Splits a line at its first space: `device {"json"}` → (`device`, `{"json"}`).
func word(_ line: ArraySlice<UInt8>) -> (head: String, rest: [UInt8]) {
    guard let space = line.firstIndex(of: UInt8(ascii: " ")) else { return (String(decoding: line, as: UTF8.self), []) }
    return (String(decoding: line[..<space], as: UTF8.self), Array(line[(space + 1)...]))
}
