// The page's Matter administration (docs/web-api.md, "Matter"), for the admin alone (a viewer gets 403): whether the
// hub can be commissioned and with which codes (the QR code drawn as SVG from libqrencode's matrix), its fabrics,
// opening a window for another ecosystem, removing a fabric. It calls what `hearthd matter …` calls
// (`MatterAdministration`, through `HubMatter`). The passcode and codes go only into these answers: never into a log
// line, never onto the event stream or MQTT.
import HearthHub
import HearthJSON
public import HearthMatter
public import HearthModel
import HearthSync
import Logging

/// What the panel needs of the hub's Matter node; the hub's `HubMatter` in a daemon, a stand-in in the tests.
protocol MatterPanelNode: Sendable {
    var pairing: MatterPairing { get }
    func commissioning() async throws(MatterAdministrationError) -> HubMatter.Commissioning
    func fabrics() -> [MatterFabricSummary]
    func openWindow(timeoutSeconds: Int) async throws(MatterAdministrationError) -> MatterPairing
    func removeFabric(_ index: FabricIndex) async throws(MatterAdministrationError)
}

extension HubMatter: MatterPanelNode {
    func fabrics() -> [MatterFabricSummary] { administration.fabrics() }
    func openWindow(timeoutSeconds: Int) async throws(MatterAdministrationError) -> MatterPairing {
        try await administration.openWindow(timeoutSeconds: timeoutSeconds)
    }
    func removeFabric(_ index: FabricIndex) async throws(MatterAdministrationError) {
        try await administration.removeFabric(index)
    }
}

final class WebMatter: Sendable {
    let node: (any MatterPanelNode)?
    private let logger: Logger
    /// The codes of the window this page opened last, shown again while that window is open (the node keeps only
    /// their verifier).
    private let opened = Locked<MatterPairing?>(nil)

    init(node: (any MatterPanelNode)?, logger: Logger) {
        self.node = node
        self.logger = logger
    }

    /// What the panel says when the node is off.
    static let offMessage =
        "the hub's Matter node is off: set `matter: {enabled: true}` in the configuration (the Configuration tab) and "
            + "save"

    /// Answers `/api/admin/matter…`; false for any other route.
    func route(_ r: WebRequest, _ session: WebSession, _ route: [String],
               _ reply: @escaping @Sendable (WebResponse) -> Void) -> Bool {
        guard route.count >= 2, route[0] == "admin", route[1] == "matter" else { return false }
        let rest = Array(route.dropFirst(2))
        guard session.role == .admin else {
            reply(WebAPI.error(403, HomeError(code: .permissionDenied, status: .unsupportedAccess,
                                              message: "the hub's Matter administration is for the admin alone")))
            return true
        }
        switch (r.method, rest) {
        case ("GET", []):
            guard let node else {
                reply(WebAPI.json(200, .object([("ok", .bool(true)), ("enabled", .bool(false)),
                                                ("message", .string(Self.offMessage))])))
                return true
            }
            Task { reply(await self.overview(node)) }
        case ("POST", ["window"]):
            let seconds: Int
            do throws(HomeError) { seconds = try MatterInput.windowSeconds(r.body) } catch {
                reply(WebAPI.error(400, error))
                return true
            }
            guard let node else { reply(Self.off()); return true }
            let user = session.user
            Task { reply(await self.openWindow(node, seconds: seconds, user: user)) }
        case ("DELETE", let path) where path.count == 2 && path[0] == "fabrics":
            let index: FabricIndex
            do throws(HomeError) { index = try MatterInput.fabricIndex(path[1]) } catch {
                reply(WebAPI.error(400, error))
                return true
            }
            guard let node else { reply(Self.off()); return true }
            let user = session.user
            Task { reply(await self.remove(node, index, user: user)) }
        default:
            reply(WebAPI.error(404, HomeError(.notFound, "no API \(r.method) /api/admin/matter"
                + rest.map { "/" + $0 }.joined())))
        }
        return true
    }

    static func off() -> WebResponse { WebAPI.error(409, HomeError(.invalidInState, offMessage)) }

    private func overview(_ node: any MatterPanelNode) async -> WebResponse {
        let state: HubMatter.Commissioning
        do throws(MatterAdministrationError) { state = try await node.commissioning() } catch {
            return Self.failure(error)
        }
        var members: [(key: String, value: JSON)] = [
            ("ok", .bool(true)), ("enabled", .bool(true)), ("commissioned", .bool(state.isCommissioned)),
        ]
        // The codes a controller can use now: the hub's own without a fabric or in a basic window, this page's in the
        // enhanced window it opened; an enhanced window another administrator opened has codes only it knows.
        var codes: MatterPairing?
        if let window = state.window {
            members.append(("window", Self.window(window)))
            if !window.isEnhanced {
                codes = node.pairing
            } else if let mine = opened.withLock({ $0 }), mine.discriminator == window.discriminator {
                codes = mine
            }
        } else if !state.isCommissioned {
            codes = node.pairing
        }
        members.append(("commissionable", .bool(!state.isCommissioned || state.window != nil)))
        if let codes { members.append(("codes", Self.codes(codes))) }
        members.append(("fabrics", .array(node.fabrics().map(Self.fabric))))
        return WebAPI.json(200, .object(members))
    }

    private func openWindow(_ node: any MatterPanelNode, seconds: Int, user: String) async -> WebResponse {
        let pairing: MatterPairing
        do throws(MatterAdministrationError) { pairing = try await node.openWindow(timeoutSeconds: seconds) } catch {
            return Self.failure(error)
        }
        opened.withLock { $0 = pairing }
        logger.notice("web: '\(user)' opened a Matter commissioning window for \(seconds) s")
        var members: [(key: String, value: JSON)] = [("ok", .bool(true)), ("codes", Self.codes(pairing))]
        if let state = try? await node.commissioning(), let window = state.window {
            members.append(("window", Self.window(window)))
        } else {
            members.append(("window", Self.window(.init(isEnhanced: true, discriminator: pairing.discriminator,
                                                        remainingSeconds: seconds, openedByFabric: nil))))
        }
        return WebAPI.json(200, .object(members))
    }

    private func remove(_ node: any MatterPanelNode, _ index: FabricIndex, user: String) async -> WebResponse {
        do throws(MatterAdministrationError) { try await node.removeFabric(index) } catch {
            return Self.failure(error)
        }
        logger.notice("web: '\(user)' removed Matter fabric \(index)")
        return WebAPI.json(200, .object([("ok", .bool(true)), ("removed", .int(Int(index))),
                                         ("fabrics", .array(node.fabrics().map(Self.fabric)))]))
    }

    /// The administration's refusals as HTTP: no such fabric 404, a window already open or a commissioning under
    /// way 409, a window on a hub without a fabric (its own code pairs it) 409, a timeout out of range 400, the node
    /// not running 503.
    static func failure(_ error: MatterAdministrationError) -> WebResponse {
        switch error {
        case .noSuchFabric: WebAPI.error(404, HomeError(.notFound, "\(error)"))
        case .window(.windowAlreadyOpen), .window(.failSafeArmed): WebAPI.error(409, HomeError(.busy, "\(error)"))
        case .window: WebAPI.error(400, HomeError.constraintError("\(error)"))
        case .notCommissioned: WebAPI.error(409, HomeError(.invalidInState, "\(error)"))
        case .failed: WebAPI.error(503, HomeError(.failure, "\(error)"))
        }
    }

    static func window(_ w: HubMatter.Commissioning.Window) -> JSON {
        var members: [(key: String, value: JSON)] = [
            ("kind", .string(w.isEnhanced ? "enhanced" : "basic")), ("remainingSeconds", .int(w.remainingSeconds)),
        ]
        if let d = w.discriminator { members.append(("discriminator", .int(Int(d)))) }
        if let f = w.openedByFabric { members.append(("openedByFabric", .int(Int(f)))) }
        return .object(members)
    }

    static func codes(_ p: MatterPairing) -> JSON {
        var members: [(key: String, value: JSON)] = [
            ("manual", .string(p.manualCode)), ("qr", .string(p.qrPayload)),
            ("discriminator", .int(Int(p.discriminator))),
        ]
        if let symbol = try? QRCodeSymbol(encoding: p.qrPayload) { members.append(("svg", .string(symbol.svg()))) }
        return .object(members)
    }

    static func fabric(_ f: MatterFabricSummary) -> JSON {
        .object([
            ("index", .int(Int(f.index))), ("label", .string(f.label)),
            ("vendorId", .string(hex(UInt64(f.vendorID), digits: 4))),
            ("fabricId", .string(hex(f.fabricID, digits: 16))),
            ("nodeId", .string(hex(f.nodeID, digits: 16))), ("rootFingerprint", .string(f.rootFingerprint)),
        ])
    }

    static func hex(_ value: UInt64, digits: Int) -> String {
        let s = String(value, radix: 16, uppercase: true)
        return "0x" + String(repeating: "0", count: max(0, digits - s.count)) + s
    }
}

/// The readers of what the Matter routes take from a browser; each is part of the `web` fuzz target.
public enum MatterInput {
    /// `POST /api/admin/matter/window`'s body: empty or `{}` for the longest window, or `{"seconds": N}` with N from
    /// 180 to 900.
    public static func windowSeconds(_ body: [UInt8]) throws(HomeError) -> Int {
        let longest = CommissioningWindow.maximumTimeoutSeconds, shortest = CommissioningWindow.minimumTimeoutSeconds
        guard !body.isEmpty else { return longest }
        guard body.count <= 1024 else {
            throw HomeError(.resourceExhausted, "the body is \(body.count) bytes; at most 1024")
        }
        let json: JSON
        do throws(JSONParseError) { json = try JSON.parse(body) } catch {
            throw HomeError.invalidCommand("the body is not JSON: \(error)")
        }
        guard case .object(let members) = json else {
            throw HomeError.invalidCommand("the body is \(json.kind), not an object")
        }
        var seconds = longest
        for (key, value) in members {
            guard key == "seconds" else {
                throw HomeError.invalidCommand("unknown member '\(key)'; this takes seconds")
            }
            guard case .int(let n) = value else {
                throw HomeError.invalidDataType("'seconds' is \(value.kind), not an integer")
            }
            guard (shortest...longest).contains(n) else {
                throw HomeError.constraintError("a window lasts \(shortest) to \(longest) seconds, not \(n)")
            }
            seconds = n
        }
        return seconds
    }

    /// A fabric index in a path: a decimal number from 1 to 254.
    public static func fabricIndex(_ text: String) throws(HomeError) -> FabricIndex {
        guard !text.isEmpty, text.utf8.count <= 3, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
              let n = Int(text), (1...254).contains(n) else {
            throw HomeError.constraintError("a fabric index is a number from 1 to 254, not \"\(text.prefix(16))\"")
        }
        return FabricIndex(n)
    }
}

extension QRCodeSymbol {
    /// The symbol as an SVG image: one path of dark modules (each row's runs), on white, with a quiet zone of
    /// `margin` modules; crisp at any size.
    func svg(margin: Int = 4) -> String {
        let size = width + 2 * margin
        var path = ""
        for row in 0..<width {
            var column = 0
            while column < width {
                guard isDark(row: row, column: column) else { column += 1; continue }
                let start = column
                while column < width && isDark(row: row, column: column) { column += 1 }
                path += "M\(start + margin) \(row + margin)h\(column - start)v1h-\(column - start)z"
            }
        }
        return
            "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 \(size) \(size)\" shape-rendering=\"crispEdges\">"
            + "<rect width=\"\(size)\" height=\"\(size)\" fill=\"#fff\"/><path fill=\"#000\" d=\"\(path)\"/></svg>"
    }
}
