// The page's Matter routes against a stand-in node: the admin alone, the codes only while the hub can be
// commissioned, a window's codes shown again to the page that opened it, precise errors for a bad fabric index, and a
// hub without Matter that says how to turn it on. The real node behind them is the browser suite's.
import HearthHub
import HearthJSON
import HearthMatter
import HearthModel
import HearthSync
import Logging
import Testing
@testable import HearthWeb

/// A node with fabrics in memory; a window opens with fixed codes.
final class StandInMatterNode: MatterPanelNode {
    let pairing = MatterPairing(passcode: 20202021, discriminator: 3840)
    let windowPairing = MatterPairing(passcode: 34567890, discriminator: 1234)
    private let state = Locked<(fabrics: [MatterFabricSummary], window: HubMatter.Commissioning.Window?)>(([], nil))

    init(fabrics: [FabricIndex] = []) {
        state.withLock {
            $0.fabrics = fabrics.map {
                MatterFabricSummary(index: $0, fabricID: 0x1234, vendorID: 0xFFF1, nodeID: 0xABCD_0000 + UInt64($0),
                                    rootFingerprint: "00112233AABBCCDD", label: "home \($0)")
            }
        }
    }

    func commissioning() async throws(MatterAdministrationError) -> HubMatter.Commissioning {
        state.withLock { HubMatter.Commissioning(isCommissioned: !$0.fabrics.isEmpty, window: $0.window) }
    }

    func fabrics() -> [MatterFabricSummary] { state.withLock { $0.fabrics } }

    func openWindow(timeoutSeconds: Int) async throws(MatterAdministrationError) -> MatterPairing {
        try state.withLock { (s) throws(MatterAdministrationError) in
            guard s.window == nil else { throw .window(.windowAlreadyOpen) }
            s.window = .init(isEnhanced: true, discriminator: windowPairing.discriminator,
                             remainingSeconds: timeoutSeconds, openedByFabric: nil)
        }
        return windowPairing
    }

    func removeFabric(_ index: FabricIndex) async throws(MatterAdministrationError) {
        try state.withLock { (s) throws(MatterAdministrationError) in
            guard s.fabrics.contains(where: { $0.index == index }) else {
                throw .noSuchFabric(index, existing: s.fabrics.map(\.index))
            }
            s.fabrics.removeAll { $0.index == index }
        }
    }
}

@Suite(.timeLimit(.minutes(1))) struct WebMatterTests {
    static let admin = WebSession(user: "admin", role: .admin, passwordHash: [], expires: .max)
    static let viewer = WebSession(user: "guest", role: .viewer, passwordHash: [], expires: .max)

    /// One route's answer: (status, JSON).
    func call(_ matter: WebMatter, _ method: String, _ path: String, body: String = "",
              as session: WebSession = admin) async throws -> (Int, JSON) {
        let request = WebRequest(method: method, uri: path, host: "127.0.0.1", origin: nil, cookie: nil,
                                 contentType: "application/json", remote: "127.0.0.1", remoteIsLoopback: true,
                                 body: Array(body.utf8))
        let route = Array(path.split(separator: "/").dropFirst().map(String.init))
        let response: WebResponse = await withCheckedContinuation { continuation in
            let matched = matter.route(request, session, route) { continuation.resume(returning: $0) }
            if !matched { continuation.resume(returning: WebResponse(status: 0)) }
        }
        return (response.status, try JSON.parse(response.body))
    }

    func panel(_ node: (any MatterPanelNode)?) -> WebMatter { WebMatter(node: node, logger: Logger(label: "test")) }

    func message(_ json: JSON) -> String? {
        guard case .string(let m)? = json["error"]?["message"] else { return nil }
        return m
    }

    @Test func aViewerGetsNoneOfItAndNoCode() async throws {
        let matter = panel(StandInMatterNode())
        for (method, path) in [("GET", "/api/admin/matter"), ("POST", "/api/admin/matter/window"),
                               ("DELETE", "/api/admin/matter/fabrics/1")] {
            let (status, json) = try await call(matter, method, path, as: Self.viewer)
            #expect(status == 403, "\(method) \(path)")
            #expect(json["codes"] == nil)
            #expect(message(json) == "the hub's Matter administration is for the admin alone")
        }
    }

    @Test func anUnpairedHubShowsItsOwnCodes() async throws {
        let node = StandInMatterNode()
        let (status, json) = try await call(panel(node), "GET", "/api/admin/matter")
        #expect(status == 200)
        #expect(json["commissioned"] == .bool(false) && json["commissionable"] == .bool(true))
        #expect(json["codes"]?["manual"] == .string(node.pairing.manualCode))
        #expect(json["codes"]?["qr"] == .string(node.pairing.qrPayload))
        guard case .string(let svg)? = json["codes"]?["svg"] else { Issue.record("no SVG"); return }
        #expect(svg.hasPrefix("<svg xmlns=\"http://www.w3.org/2000/svg\""))
        #expect(json["fabrics"] == .array([]))
    }

    @Test func aPairedHubListsFabricsAndShowsNoCodeUntilAWindowOpens() async throws {
        let node = StandInMatterNode(fabrics: [1, 2])
        let matter = panel(node)
        var (status, json) = try await call(matter, "GET", "/api/admin/matter")
        #expect(status == 200)
        #expect(json["commissionable"] == .bool(false) && json["codes"] == nil)
        guard case .array(let fabrics)? = json["fabrics"] else { Issue.record("no fabrics"); return }
        #expect(fabrics.count == 2)
        #expect(fabrics.first?["index"] == .int(1) && fabrics.first?["vendorId"] == .string("0xFFF1"))
        #expect(fabrics.first?["fabricId"] == .string("0x0000000000001234"))
        #expect(fabrics.first?["nodeId"] == .string("0x00000000ABCD0001"))
        #expect(fabrics.first?["label"] == .string("home 1"))

        (status, json) = try await call(matter, "POST", "/api/admin/matter/window", body: #"{"seconds": 300}"#)
        #expect(status == 200)
        #expect(json["codes"]?["manual"] == .string(node.windowPairing.manualCode))
        #expect(json["window"]?["remainingSeconds"] == .int(300))
        // Shown again to the page while that window is open.
        (status, json) = try await call(matter, "GET", "/api/admin/matter")
        #expect(json["commissionable"] == .bool(true) && json["window"]?["kind"] == .string("enhanced"))
        #expect(json["codes"]?["manual"] == .string(node.windowPairing.manualCode))
        // A second window while one is open: busy, and said so.
        (status, json) = try await call(matter, "POST", "/api/admin/matter/window", body: "{}")
        #expect(status == 409 && message(json) == "a commissioning window is open already")
    }

    @Test func aWindowsTimeIsChecked() async throws {
        let matter = panel(StandInMatterNode(fabrics: [1]))
        let (status, json) = try await call(matter, "POST", "/api/admin/matter/window", body: #"{"seconds": 60}"#)
        #expect(status == 400 && message(json) == "a window lasts 180 to 900 seconds, not 60")
        #expect(throws: HomeError.self) { try MatterInput.windowSeconds(Array(#"{"minutes": 3}"#.utf8)) }
        #expect(try MatterInput.windowSeconds([]) == 900)
    }

    @Test func aBadFabricIndexIsRefusedPrecisely() async throws {
        let node = StandInMatterNode(fabrics: [1, 2])
        let matter = panel(node)
        for bad in ["abc", "0", "255", "-1", "1000"] {
            let (status, json) = try await call(matter, "DELETE", "/api/admin/matter/fabrics/\(bad)")
            #expect(status == 400)
            #expect(message(json) == "a fabric index is a number from 1 to 254, not \"\(bad)\"")
        }
        var (status, json) = try await call(matter, "DELETE", "/api/admin/matter/fabrics/7")
        #expect(status == 404 && message(json) == "no fabric 7; the hub has 1, 2")
        (status, json) = try await call(matter, "DELETE", "/api/admin/matter/fabrics/2")
        #expect(status == 200 && json["removed"] == .int(2))
        #expect(node.fabrics().map(\.index) == [1])
    }

    @Test func withoutMatterThePanelSaysHowToTurnItOn() async throws {
        let matter = panel(nil)
        var (status, json) = try await call(matter, "GET", "/api/admin/matter")
        #expect(status == 200 && json["enabled"] == .bool(false))
        #expect(json["message"] == .string(WebMatter.offMessage))
        (status, json) = try await call(matter, "POST", "/api/admin/matter/window")
        #expect(status == 409 && message(json) == WebMatter.offMessage)
        (status, json) = try await call(matter, "DELETE", "/api/admin/matter/fabrics/1")
        #expect(status == 409 && message(json) == WebMatter.offMessage)
    }

    @Test func theQRCodesSVGHasEveryDarkModule() throws {
        let symbol = try QRCodeSymbol(encoding: "MT:Y.K9042C00KA0648G00")
        let svg = symbol.svg(margin: 4)
        #expect(svg.contains("viewBox=\"0 0 \(symbol.width + 8) \(symbol.width + 8)\""))
        // Each run is one `M x y h n v1 h-n z`; their lengths add up to the dark modules.
        var dark = 0
        for part in svg.split(separator: "h").dropFirst() where !part.hasPrefix("-") {
            dark += Int(part.prefix { $0.isNumber }) ?? 0
        }
        #expect(dark == symbol.modules.filter { $0 }.count)
    }
}
