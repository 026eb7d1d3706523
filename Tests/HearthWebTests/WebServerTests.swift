// The web page's server over real HTTP on 127.0.0.1, against a real hearthd on the simulated board and a private
// mosquitto: setup, sign-in, the API's answers and checks, the event stream, the broker going away.
import Foundation
import HearthJSON
import HearthMQTT
import HearthSync
import HearthTestKit
import NIOHTTP1
import Testing
@testable import HearthWeb
#if canImport(Glibc)
import Glibc
#endif

/// A hub with its web page: a configuration on the simulated board, a broker, the real hearthd.
final class WebRig: @unchecked Sendable {
    let broker: TestBroker
    let directory: String
    let webPort: Int
    var daemon: RunningProduct?
    var configFile: String { "\(directory)/hearth.yaml" }
    var starts = 0

    init(web: String? = nil, peers: String = "", groups: String = "", webPort: Int? = nil) throws {
        broker = try TestBroker()
        self.webPort = try webPort ?? Self.freeLoopbackPort()
        directory = NSTemporaryDirectory() + "hearth-web-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: Repository.path("boards/sim.yaml"), toPath: "\(directory)/sim.yaml")
        try """
        hub: {id: web, board: sim.yaml, stateDirectory: state}
        mqtt: {host: 127.0.0.1, port: \(broker.port), keepAlive: 5s}
        web: \(web ?? "{listen: 127.0.0.1, port: \(self.webPort)}")
        \(peers)
        devices:
          - {id: lamp, name: Lamp, room: kitchen, type: DimmableLight,
             binding: {kind: pwmDimmer, pwm: dimmer-1, relay: dimmer-relay}}
          - {id: porch, name: Porch, type: OnOffLight, binding: {kind: relay, pin: relay-1}}
          - {id: virtual, name: Virtual lamp, type: DimmableLight}
        \(groups)
        """.write(toFile: configFile, atomically: true, encoding: .utf8)
    }

    /// A port free now (bound to port 0 and released), for the hub to listen on.
    static func freeLoopbackPort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard ok else { throw TestFixtureError("no free loopback port: \(String(cString: strerror(errno)))") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    func start() throws {
        starts += 1
        daemon = try RunningProduct(
            "hearthd", ["run", "--config", configFile], outputFile: "\(directory)/hearthd-\(starts).log")
    }

    /// Waits until the page answers.
    func waitForPage() async -> Bool {
        await poll(within: .seconds(30), every: .milliseconds(50)) {
            (try? await HTTPTestClient.request(port: webPort, .GET, "/"))?.status == 200
        }
    }

    /// The setup code the hub printed to its log.
    var printedSetupCode: String? {
        guard let line = daemon?.output.split(separator: "\n").first(where: { $0.contains("one-time setup code") }),
              let range = line.range(of: "setup code: ") else { return nil }
        return String(line[range.upperBound...].prefix { $0 != " " })
    }

    func get(_ path: String, cookie: String? = nil) async throws -> HTTPResult {
        try await HTTPTestClient.request(port: webPort, .GET, path, headers: cookie.map { [("Cookie", $0)] } ?? [])
    }

    func post(_ path: String, _ body: String, cookie: String? = nil, origin: String? = "same",
              contentType: String = "application/json", method: HTTPMethod = .POST) async throws -> HTTPResult {
        var headers: [(String, String)] = [("Content-Type", contentType)]
        if let cookie { headers.append(("Cookie", cookie)) }
        if let origin { headers.append(("Origin", origin == "same" ? "http://127.0.0.1:\(webPort)" : origin)) }
        return try await HTTPTestClient.request(port: webPort, method, path, headers: headers, body: Array(body.utf8))
    }

    /// Sets the admin password with the printed code; the session cookie.
    func setUp(password: String = "correct horse battery") async throws -> String {
        // The page may answer a moment before the line is written.
        #expect(await poll(within: .seconds(10), every: .milliseconds(20)) { printedSetupCode != nil })
        let code = try #require(printedSetupCode)
        let r = try await post("/api/setup", #"{"code":"\#(code)","password":"\#(password)"}"#)
        #expect(r.status == 200, "\(r.text)")
        return try #require(Self.cookie(r))
    }

    static func cookie(_ r: HTTPResult) -> String? {
        r.header("set-cookie")?.split(separator: ";").first.map(String.init)
    }

    deinit {
        daemon?.signal(SIGTERM)
        try? FileManager.default.removeItem(atPath: directory)
    }
}

func parse(_ r: HTTPResult) -> JSON? { try? JSON.parse(r.body) }

/// The first element of a JSON array.
func first(_ array: JSON?) -> JSON? {
    guard case .array(let elements)? = array else { return nil }
    return elements.first
}

/// The first device type's `onOff` attribute in a device document.
func onOff(_ doc: JSON?) -> JSON? {
    guard case .array(let types)? = doc?["types"] else { return nil }
    return types.first?["traits"]?["onOff"]?["attributes"]?["onOff"]
}

@Suite(.serialized, .timeLimit(.minutes(5))) struct WebServerTests {
    @Test func setupSignInControlAndSignOut() async throws {
        let rig = try WebRig()
        try rig.start()
        #expect(await rig.waitForPage(), "\(rig.daemon?.output ?? "")")

        // The page itself needs no session and names no other host; the API answers nothing without one.
        let page = try await rig.get("/")
        #expect(page.header("content-security-policy")?.contains("default-src 'none'") == true)
        #expect(!page.text.contains("http://") && !page.text.contains("https://"))
        let unauthenticated = try await rig.get("/api/home")
        #expect(unauthenticated.status == 401)
        #expect(parse(unauthenticated)?["setupNeeded"] == .bool(true))
        #expect(parse(unauthenticated)?["error"]?["code"] == .string("unauthenticated"))

        // The printed code is what `hearthd web setup-code` prints; a wrong one is refused.
        #expect(await poll(within: .seconds(10), every: .milliseconds(20)) { rig.printedSetupCode != nil })
        let code = try #require(rig.printedSetupCode)
        let printed = try BuiltProduct.run("hearthd", ["web", "setup-code", "--config", rig.configFile])
        #expect(printed.output.contains(code))
        #expect(
            try await rig.post("/api/setup", #"{"code":"AAAA-BBBB-CCCC","password":"correct horse battery"}"#).status
                == 401)
        #expect(try await rig.post("/api/setup", #"{"code":"\#(code)","password":"short"}"#).status == 400)
        let cookie = try await rig.setUp()
        let setCookie = try await rig.post("/api/login", #"{"password":"correct horse battery"}"#)
        #expect(setCookie.header("set-cookie")?.contains("HttpOnly; SameSite=Strict; Max-Age=") == true)
        // Used up.
        #expect(try await rig.post("/api/setup", #"{"code":"\#(code)","password":"another long one"}"#).status == 409)

        // The home and a device document, as over MQTT.
        let home = try #require(parse(try await rig.get("/api/home", cookie: cookie)))
        guard case .array(let devices) = home else { Issue.record("home is \(home)"); return }
        #expect(devices.compactMap { $0["id"] } == [.string("lamp"), .string("porch"), .string("virtual")])
        let traits = try #require(parse(try await rig.get("/api/traits", cookie: cookie)))
        #expect(traits["levelControl"]?["commands"]?["moveToLevel"] != nil)

        // A command through the hub's request path, on the device's lane; the MQTT document follows.
        let watcher = try await rig.broker.connectedProbe()
        try watcher.client.subscribe("hearth/web/devices/porch")
        let on = try await rig.post(
            "/api/devices/porch/request", #"{"transaction":"w1","trait":"onOff","command":"on"}"#, cookie: cookie)
        #expect(parse(on)?["ok"] == .bool(true), "\(on.text)")
        #expect(parse(on)?["transaction"] == .string("w1"))
        #expect(
            await watcher.message(on: "hearth/web/devices/porch") { onOff(try? JSON.parse($0.payload)) == .bool(true) }
                != nil)
        let porch = try #require(parse(try await rig.get("/api/devices/porch", cookie: cookie)))
        #expect(onOff(porch) == .bool(true))

        // A refused value: the hub's HomeError, exactly as over MQTT.
        let refused = try await rig.post(
            "/api/devices/lamp/request",
            #"{"trait":"levelControl","command":"moveToLevel","args":{"level":999}}"#, cookie: cookie)
        #expect(refused.status == 200)
        #expect(parse(refused)?["ok"] == .bool(false))
        #expect(parse(refused)?["error"]?["status"] == .string("constraintError"))
        #expect(parse(refused)?["error"]?["code"] == .string("invalidArgument"))
        let unknown = try await rig.post(
            "/api/devices/nothing/request", #"{"trait":"onOff","command":"on"}"#, cookie: cookie)
        #expect(parse(unknown)?["error"]?["code"] == .string("notFound"))

        // Sign out: the cookie no longer opens anything.
        #expect(try await rig.post("/api/logout", "{}", cookie: cookie).status == 200)
        #expect(try await rig.get("/api/home", cookie: cookie).status == 401)
    }

    /// A configuration or an archive may be megabytes, but only the admin's is read at that size: anyone else's body
    /// is held to a device request's and answered as the session deserves, not with a complaint about its size.
    @Test func largeBodiesAreReadOnlyFromTheAdmin() async throws {
        let rig = try WebRig()
        try rig.start()
        #expect(await rig.waitForPage())
        let admin = try await rig.setUp()
        let large = ##"{"text":"# "## + String(repeating: "x", count: 200_000) + #"\n"}"#
        // Larger than even the admin may send: a stranger and a viewer are refused for who they are, the admin for
        // the size.
        let huge = String(repeating: " ", count: 3 << 20)

        let stranger = try await rig.post("/api/admin/config/check", huge)
        #expect(stranger.status == 401, "\(stranger.text)")
        #expect(parse(stranger)?["error"]?["code"] == .string("unauthenticated"))
        let archive = try await rig.post(
            "/api/restore", String(repeating: "x", count: 200_000), contentType: "application/x-tar")
        #expect(archive.status == 401, "\(archive.text)")
        let tooLarge = try await rig.post("/api/admin/config/check", huge, cookie: admin)
        #expect(tooLarge.status == 413, "\(tooLarge.text)")

        #expect(
            try await rig.post("/api/users", #"{"name":"guest","password":"guest password 1"}"#, cookie: admin).status
                == 200)
        let viewer = try #require(
            WebRig.cookie(try await rig.post("/api/login", #"{"user":"guest","password":"guest password 1"}"#)))
        let viewed = try await rig.post("/api/admin/config/check", huge, cookie: viewer)
        #expect(viewed.status == 403, "\(viewed.text)")
        #expect(parse(viewed)?["error"]?["code"] == .string("permissionDenied"))

        // The admin's is read whole and checked: a comment alone is not a configuration.
        let checked = try await rig.post("/api/admin/config/check", large, cookie: admin)
        #expect(checked.status == 422, "\(checked.text)")
        // And the page goes on serving.
        #expect(try await rig.get("/api/session", cookie: admin).status == 200)
    }

    @Test func changesAreCheckedAndViewersChangeNothing() async throws {
        let rig = try WebRig()
        try rig.start()
        #expect(await rig.waitForPage())
        let admin = try await rig.setUp()

        // Another site's page, a form's body type, a foreign Host: refused before anything runs.
        let crossSite = try await rig.post(
            "/api/devices/porch/request", #"{"trait":"onOff","command":"on"}"#, cookie: admin,
            origin: "http://evil.example")
        #expect(crossSite.status == 403)
        let form = try await rig.post("/api/devices/porch/request", "trait=onOff", cookie: admin,
                                      contentType: "application/x-www-form-urlencoded")
        #expect(form.status == 415)
        #expect(
            try await HTTPTestClient.request(
                port: rig.webPort, .GET, "/api/home", headers: [("Cookie", admin)],
                host: "rebound.example:\(rig.webPort)"
            ).status != 403)  // loopback: a proxy's
        let tooLarge = try await rig.post("/api/login", String(repeating: " ", count: 70_000))
        #expect(tooLarge.status == 413)

        // A viewer sees and changes nothing, and cannot manage accounts.
        #expect(
            try await rig.post("/api/users", #"{"name":"guest","password":"guest password 1"}"#, cookie: admin).status
                == 200)
        let signIn = try await rig.post("/api/login", #"{"user":"guest","password":"guest password 1"}"#)
        let viewer = try #require(WebRig.cookie(signIn))
        #expect(try await rig.get("/api/home", cookie: viewer).status == 200)
        let refused = try await rig.post(
            "/api/devices/porch/request", #"{"trait":"onOff","command":"on"}"#, cookie: viewer)
        #expect(refused.status == 403)
        #expect(parse(refused)?["error"]?["code"] == .string("permissionDenied"))
        #expect(
            try await rig.post("/api/users", #"{"name":"x","password":"0123456789ab"}"#, cookie: viewer).status == 403)

        // Removing the viewer ends its session.
        #expect(try await rig.post("/api/users/guest", "", cookie: admin, method: .DELETE).status == 200)
        #expect(try await rig.get("/api/home", cookie: viewer).status == 401)

        // A changed password ends the old sessions; reset-password forgets the admin and makes a new code.
        let changed = try await rig.post(
            "/api/password", #"{"current":"correct horse battery","new":"a new long password"}"#, cookie: admin)
        #expect(changed.status == 200, "\(changed.text)")
        #expect(try await rig.get("/api/home", cookie: admin).status == 401)
        let fresh = try #require(WebRig.cookie(changed))
        #expect(try await rig.get("/api/home", cookie: fresh).status == 200)
        let reset = try BuiltProduct.run("hearthd", ["web", "reset-password", "--config", rig.configFile])
        #expect(reset.status == 0, "\(reset.output)")
        #expect(try await rig.get("/api/home", cookie: fresh).status == 401)
        let newCode = try #require(reset.output.split(separator: "\n").last.map(String.init))
        #expect(
            try await rig.post("/api/setup", #"{"code":"\#(newCode)","password":"yet another password"}"#).status == 200
        )

        // Wrong passwords: after five, the address waits (last: it would hold up the sign-ins above).
        var statuses: [Int] = []
        for _ in 0..<6 {
            statuses.append(try await rig.post("/api/login", #"{"password":"wrong wrong wrong"}"#).status)
        }
        #expect(statuses.prefix(5).allSatisfy { $0 == 401 })
        #expect(statuses.last == 429)
    }

    @Test func eventStreamSnapshotChangesAndTheBrokerLink() async throws {
        let rig = try WebRig()
        try rig.start()
        #expect(await rig.waitForPage())
        let cookie = try await rig.setUp()
        #expect(try await HTTPTestClient.request(port: rig.webPort, .GET, "/api/events").status == 401)
        let stream = try await HTTPTestClient.events(port: rig.webPort, cookie: cookie)
        #expect(stream.status == 200)
        // The snapshot: the status, the home, every device, then `ready`.
        #expect(await stream.waitFor { !$0.events("ready").isEmpty }, "\(stream.text)")
        #expect(stream.events("device").count == 3)
        #expect(stream.events("home").count == 1)
        #expect(stream.events("status").first?.contains(#""connected":true"#) == true)

        // A change from MQTT arrives on the stream (one more client of the same engine).
        let mqtt = try await rig.broker.connectedProbe().client
        try mqtt.publish("hearth/web/devices/virtual/set", payload: Array(#"{"setName":"Renamed"}"#.utf8))
        #expect(await stream.waitFor { $0.events("device").contains { $0.contains(#""name":"Renamed""#) } })
        #expect(await stream.waitFor { $0.events("home").contains { $0.contains(#""Renamed""#) } })
        mqtt.disconnect()

        // The broker goes away: the page still commands the hub, and the stream says the link is down; then back.
        rig.broker.stop()
        #expect(await stream.waitFor { $0.events("status").last?.contains(#""connected":false"#) == true })
        let off = try await rig.post(
            "/api/devices/porch/request", #"{"trait":"onOff","command":"toggle"}"#, cookie: cookie)
        #expect(parse(off)?["ok"] == .bool(true), "\(off.text)")
        #expect(await stream.waitFor { $0.events("device").last?.contains(#""onOff":true"#) == true })
        try rig.broker.restart()
        #expect(
            await stream.waitFor(within: .seconds(40)) {
                $0.events("status").last?.contains(#""connected":true"#) == true
            })

        // A cut stream: a new one gets the whole snapshot again.
        stream.close()
        let again = try await HTTPTestClient.events(port: rig.webPort, cookie: cookie)
        #expect(await again.waitFor { !$0.events("ready").isEmpty })
        #expect(again.events("device").contains { $0.contains(#""onOff":true"#) })
        again.close()
    }

    /// A group request from the page: one send, run on every member of this hub through the group path, answered
    /// with the hub's summary (what ran, who refused and why), as on `<prefix>/groups/<id>/set`.
    @Test func aGroupRequestRunsOnEveryMemberAndSaysWhere() async throws {
        let rig = try WebRig(groups: """
        groups:
          - id: 1
            name: Downstairs
            members: [lamp, porch, virtual]
            scenes: [{id: 2, name: Evening, values: {onOff: {onOff: true}, levelControl: {currentLevel: 80}}}]
        """)
        try rig.start()
        #expect(await rig.waitForPage(), "\(rig.daemon?.output ?? "")")
        let cookie = try await rig.setUp()

        // The memberships, exactly the payload of <prefix>/<hub>/groups.
        let list = try #require(parse(try await rig.get("/api/groups", cookie: cookie)))
        guard case .array(let memberships) = list else { Issue.record("groups is \(list)"); return }
        #expect(memberships.compactMap { $0["device"] } == [.string("lamp"), .string("porch"), .string("virtual")])
        #expect(memberships.allSatisfy { $0["group"] == .int(1) && $0["name"] == .string("Downstairs") })
        #expect(first(memberships.first?["scenes"])?["name"] == .string("Evening"))

        let off = try await rig.post(
            "/api/groups/1/request", #"{"transaction":"g1","trait":"onOff","command":"off"}"#, cookie: cookie)
        #expect(off.status == 200)
        #expect(parse(off)?["transaction"] == .string("g1"))
        #expect(parse(off)?["ok"] == .bool(true), "\(off.text)")
        // One hub here: its summary alone, with the page's transaction.
        #expect(first(parse(off)?["hubs"])?["hub"] == .string("web"))
        #expect(first(parse(off)?["hubs"])?["transaction"] == .string("g1"))
        #expect(first(parse(off)?["hubs"])?["ran"] == .array([.string("lamp"), .string("porch"), .string("virtual")]))

        // A scene: every member takes its values; the documents say so.
        let recall = try await rig.post(
            "/api/groups/1/request",
            #"{"trait":"scenesManagement","command":"recallScene","args":{"sceneId":2}}"#, cookie: cookie)
        #expect(parse(recall)?["ok"] == .bool(true), "\(recall.text)")
        func document(_ id: String) async -> JSON? {
            (try? await rig.get("/api/devices/\(id)", cookie: cookie)).flatMap(parse)
        }
        #expect(await poll(within: .seconds(10), every: .milliseconds(20)) {
            guard let lamp = await document("lamp"), let porch = await document("porch") else { return false }
            return onOff(lamp) == .bool(true) && onOff(porch) == .bool(true)
                && first(lamp["types"])?["traits"]?["levelControl"]?["attributes"]?["currentLevel"] == .int(80)
        })

        // A member without the trait refuses; the others run; the summary names each.
        let level = try await rig.post(
            "/api/groups/1/request",
            #"{"trait":"levelControl","command":"moveToLevel","args":{"level":20}}"#, cookie: cookie)
        #expect(parse(level)?["ok"] == .bool(false), "\(level.text)")
        #expect(first(parse(level)?["hubs"])?["ran"] == .array([.string("lamp"), .string("virtual")]))
        #expect(first(first(parse(level)?["hubs"])?["refused"])?["device"] == .string("porch"))
        #expect(first(first(parse(level)?["hubs"])?["refused"])?["error"]?["message"] != nil)

        // Bad input: a request that cannot be read is refused by every member, nothing runs; a group with no member
        // here, and a group that is not a number.
        let bad = try await rig.post(
            "/api/groups/1/request", #"{"trait":"onOff","command":"toggle","extra":1}"#, cookie: cookie)
        #expect(parse(bad)?["ok"] == .bool(false))
        #expect(first(parse(bad)?["hubs"])?["ran"] == .array([]))
        let none = try await rig.post("/api/groups/7/request", #"{"trait":"onOff","command":"on"}"#, cookie: cookie)
        #expect(parse(none)?["error"]?["code"] == .string("notFound"), "\(none.text)")
        #expect(
            try await rig.post("/api/groups/x/request", #"{"trait":"onOff","command":"on"}"#, cookie: cookie).status
                == 404)
        #expect(
            try await rig.post("/api/groups/70000/request", #"{"trait":"onOff","command":"on"}"#, cookie: cookie).status
                == 404)
        #expect(try await rig.post("/api/groups/1/request", #"{"trait":"onOff","command":"on"}"#).status == 401)
    }

    @Test func aTakenPortIsAConfigurationError() async throws {
        // A port this test process holds (bound, never listening): hearthd cannot bind it.
        let rig = try WebRig(webPort: try TestBroker.unusedLoopbackPort())
        try rig.start()
        #expect(await rig.daemon?.exitStatus() == 78)
        #expect(rig.daemon?.output.contains("web: cannot listen on 127.0.0.1 port \(rig.webPort)") == true,
                "\(rig.daemon?.output ?? "")")
    }

    /// The page's files compiled into hearthd are the ones in Sources/HearthWeb/Page (scripts/web-page), and small.
    @Test func pageFilesAreInStepAndSmall() throws {
        for (file, text) in [
            ("index.html", PageFiles.indexHTML), ("app.css", PageFiles.appCSS), ("app.js", PageFiles.appJS)
        ] {
            let source = try String(contentsOfFile: Repository.path("Sources/HearthWeb/Page/\(file)"), encoding: .utf8)
            #expect(source == text + "\n", "\(file) changed: run scripts/web-page")
            #expect(!source.contains("http://") && !source.contains("https://"), "\(file) names another host")
        }
        let total = PageFiles.indexHTML.utf8.count + PageFiles.appCSS.utf8.count + PageFiles.appJS.utf8.count
        #expect(total < 60_000)
    }
}
