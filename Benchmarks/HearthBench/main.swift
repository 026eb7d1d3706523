// Engine benchmarks: commands per second through the trait engine for 1,000 devices, and the
// cost of rendering 1,000 simultaneous fades. Each figure comes with a baseline measured in the
// same run, so the ratio means something on any machine. With --fades: 50 dimmers fading on time under load.
import HearthEngine
import HearthModel
import Synchronization
import Glibc

// `--fades`: only the fades under load (Fades.swift), a whole hub on a private broker for about 15 s.
if CommandLine.arguments.contains("--fades") {
    // HEARTH_BENCH_FADE_LOAD: the unrelated requests a second (1,000 unless set; 0 shows the fades' lateness alone).
    let load = Int(getenv("HEARTH_BENCH_FADE_LOAD").map { String(cString: $0) } ?? "") ?? 1000
    try await fadesUnderLoad(loadPerSecond: load)
    exit(0)
}

let deviceCount = 1000
let commandCount = Int(getenv("HEARTH_BENCH_COMMANDS").map { String(cString: $0) } ?? "") ?? 200_000

func measure(_ body: () throws -> Void) rethrows -> Double {
    let clock = ContinuousClock()
    let start = clock.now
    try body()
    let d = clock.now - start
    return Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
}

/// The floor: the least any engine must do per command (find the device by id under a lock and flip a bit).
func baseline() -> Double {
    let ids = (0..<deviceCount).map { "light-\($0)" }
    let states = Mutex([String: Bool](uniqueKeysWithValues: ids.map { ($0, false) }))
    var sink = 0
    let seconds = measure {
        for i in 0..<commandCount {
            let id = ids[i % deviceCount]
            states.withLock { s in s[id]?.toggle(); if s[id] == true { sink &+= 1 } }
        }
    }
    precondition(sink >= 0)
    return seconds
}

let clock = ManualClock()
let home = try Home(
    devices: (0..<deviceCount).map { i in
        DeviceConfiguration(id: "light-\(i)", name: "Light \(i)", types: [DeviceTypeConfiguration(.dimmableLight)])
    },
    clock: clock)
let ids = home.deviceIDs

for id in ids { try home.invoke(id, trait: "onOff", command: "on") }  // warm up

let toggles = try measure {
    for i in 0..<commandCount { try home.invoke(ids[i % deviceCount], trait: "onOff", command: "toggle") }
}
let levels = try measure {
    for i in 0..<commandCount {
        try home.invoke(ids[i % deviceCount], trait: "levelControl", command: "moveToLevelWithOnOff",
                        arguments: ["level": .int(1 + i % 254), "transitionTime": .int(0)])
    }
}
let writes = try measure {
    for i in 0..<commandCount {
        try home.update(ids[i % deviceCount], trait: "levelControl", attributes: ["onLevel": .int(1 + i % 254)])
    }
}
let floor = baseline()

// 1,000 lights fading over 10 s at 50 steps/s: 500,000 rendered steps.
for id in ids {
    try home.invoke(id, trait: "levelControl", command: "moveToLevelWithOnOff",
                    arguments: ["level": .int(254), "transitionTime": .int(0)])
    try home.invoke(id, trait: "levelControl", command: "moveToLevel", arguments: ["level": .int(1), "transitionTime": .int(100)])
}
let fadeSteps = Int(getenv("HEARTH_BENCH_STEPS").map { String(cString: $0) } ?? "") ?? 500
let fades = measure {
    for _ in 0..<fadeSteps {
        clock.advance(by: 20)
        home.advance(to: clock.now)
    }
}

func rate(_ seconds: Double) -> String { String(Int(Double(commandCount) / seconds)) }
func perCommand(_ seconds: Double) -> String { String(Int(seconds / Double(commandCount) * 1e9)) }
func ratio(_ seconds: Double) -> String {
    let r = seconds / floor
    return String(Int(r)) + "." + String(Int(r * 10) % 10)
}

print("engine, \(deviceCount) devices, \(commandCount) commands each (baseline: a locked dictionary toggle, \(perCommand(floor)) ns)")
print("  onOff.toggle:                \(rate(toggles)) commands/s, \(perCommand(toggles)) ns each, \(ratio(toggles))× baseline")
print("  moveToLevelWithOnOff:        \(rate(levels)) commands/s, \(perCommand(levels)) ns each, \(ratio(levels))× baseline")
print("  update onLevel:              \(rate(writes)) writes/s, \(perCommand(writes)) ns each, \(ratio(writes))× baseline")
let stepsPerSecond = Double(fadeSteps * deviceCount) / fades
if fadeSteps > 0 { print("  1000 simultaneous fades:     \(Int(stepsPerSecond)) steps/s; rendering them at 50/s takes \(Int(50_000 / stepsPerSecond * 1000) / 10)% of a core") }

let rounds = Int(getenv("HEARTH_BENCH_ROUNDS").map { String(cString: $0) } ?? "") ?? 20_000
let stages = try pipeline(rounds: rounds)
let total = stages.reduce(0) { $0 + $1.1 }
print("hub pipeline without the network, 100 DimmableLights, onOff.toggle (\(Int(total / Double(rounds) * 1e9)) ns a command)")
for (name, seconds) in stages {
    let label = name + ":"
    print("  " + label + String(repeating: " ", count: max(1, 28 - label.count)) + "\(Int(seconds / Double(rounds) * 1e9)) ns")
}
