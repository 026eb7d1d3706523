// The hub's per-command pipeline without the network, stage by stage, for 100 DimmableLights: what a
// request costs between the socket read and the socket write (the hub's part of command → state).
import HearthEngine
import HearthModel
import HearthContract
import HearthHub
import HearthJSON

func pipeline(rounds: Int) throws -> [(String, Double)] {
    let count = 100
    let home = try Home(devices: (0..<count).map { i in
        DeviceConfiguration(id: "light-\(i)", name: "Light \(i)", types: [DeviceTypeConfiguration(.dimmableLight)])
    }, clock: ManualClock())
    let topics = TopicScheme(hub: "bench")
    let setTopics = (0..<count).map { topics.set("light-\($0)") }
    let payload = Array(#"{"trait":"onOff","command":"toggle","transaction":"t-1"}"#.utf8)
    var writer = DocumentWriter()
    var sink = 0
    for id in home.deviceIDs { sink &+= writer.document(try home.view(id)).count }  // warm the caches

    let route = measure {
        for i in 0..<rounds { sink &+= topics.deviceID(fromSetTopic: setTopics[i % count])?.utf8.count ?? 0 }
    }
    let parse = measure {
        for _ in 0..<rounds { if case .success = HubRequest.parse(payload).result { sink &+= 1 } }
    }
    let invoke = try measure {
        for i in 0..<rounds { try home.invoke("light-\(i % count)", trait: "onOff", command: "toggle") }
    }
    let view = try measure {
        for i in 0..<rounds { sink &+= try home.view("light-\(i % count)").typeCount }
    }
    let devices = try (0..<count).map { try home.view("light-\($0)") }
    let document = measure {
        for i in 0..<rounds { sink &+= writer.document(devices[i % count]).count }
    }
    let response = measure {
        for i in 0..<rounds { sink &+= HubResponse.ok(transaction: .string("t-1"), device: "light-\(i % count)").bytes.count }
    }
    precondition(sink != 42)
    return [("topic → device", route), ("parse request", parse), ("run the command", invoke),
            ("view the device", view), ("write the document", document), ("write the response", response)]
}
