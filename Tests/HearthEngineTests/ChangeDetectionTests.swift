import HearthEngine
import HearthModel
import Testing

/// The engine reads only the traits a command left unequal to what they were (`TraitServer.isUnchanged(since:)`).
/// These hold what it reports to the plain rule: after every step, the attributes reported on change (not quiet)
/// whose value differs between a full snapshot before and one after, and no others.
@Suite struct ChangeDetectionTests {
    /// The loud attributes of every trait of the lamp, by "trait.attribute".
    private func loudValues(_ r: Rig) throws -> [String: Value?] {
        var values: [String: Value?] = [:]
        for type in try r.home.device(r.device).types {
            for trait in type.traits {
                for a in trait.attributes where !a.descriptor.hasQuietReporting {
                    values["\(trait.descriptor.id.name).\(a.descriptor.name)"] = .some(a.value)
                }
            }
        }
        return values
    }

    /// Runs `step`, then checks the loud attribute changes it reported against the two snapshots.
    private func check(_ r: Rig, _ what: String, _ step: () throws -> Void) throws {
        let before = try loudValues(r)
        r.log.clear()
        try step()
        let after = try loudValues(r)
        var changed: Set<String> = []
        for (key, value) in after where before[key] != value { changed.insert(key) }
        var reported: Set<String> = []
        for e in r.log.all {
            guard case .attribute(_, let trait, let attribute, _) = e.change else { continue }
            let key = "\(trait.name).\(attribute)"
            if before[key] != nil { reported.insert(key) }  // loud ones only: quiet ones follow their own rules
        }
        #expect(reported == changed, "\(what): reported \(reported.sorted()), changed \(changed.sorted())")
    }

    @Test(arguments: [DeviceTypeDescriptor.onOffLight, .dimmableLight, .colorTemperatureLight, .onOffPlugInUnit])
    func everyStepReportsExactlyTheLoudAttributesItChanged(_ type: DeviceTypeDescriptor) throws {
        let r = try Rig(type)
        let traits = Set(try r.home.device(r.device).types.flatMap { $0.traits.map(\.descriptor.id) })
        // Lighting (OnOff's LT feature): the timed and effect commands, OnTime.
        let lighting = try r.home.device(r.device).trait(.onOff)?.supportedCommands.contains("offWithEffect") == true
        try check(r, "toggle") { try r.invoke("onOff", "toggle") }
        try check(r, "toggle back") { try r.invoke("onOff", "toggle") }
        try check(r, "off") { try r.invoke("onOff", "off") }
        try check(r, "off again") { try r.invoke("onOff", "off") }
        try check(r, "on") { try r.invoke("onOff", "on") }
        if lighting { try check(r, "write onTime") { try r.update("onOff", ["onTime": .int(3)]) } }
        try check(r, "identify") { try r.invoke("identify", "identify", ["identifyTime": .int(2)]) }
        try check(r, "identify's first second") { r.advance(1000) }
        try check(r, "identify ends") { r.advance(1500) }
        try check(r, "addGroup") { try r.invoke("groups", "addGroup", ["groupId": .int(1), "groupName": .string("")]) }
        if traits.contains(.levelControl) {
            try check(r, "moveToLevel") { try r.invoke("levelControl", "moveToLevel", ["level": .int(200)]) }
            try check(r, "write onLevel") { try r.update("levelControl", ["onLevel": .int(120)]) }
            try check(r, "fade") {
                try r.invoke("levelControl", "moveToLevel", ["level": .int(20), "transitionTime": .int(20)])
            }
            try check(r, "fade's middle") { r.advance(1000) }
            try check(r, "fade's end") { r.advance(1100) }
        }
        if traits.contains(.colorControl) {
            try check(r, "moveToColorTemperature") {
                try r.invoke("colorControl", "moveToColorTemperature", ["colorTemperatureMireds": .int(300)])
            }
        }
        if traits.contains(.scenesManagement) {
            try check(r, "storeScene") {
                try r.invoke("scenesManagement", "storeScene", ["groupId": .int(1), "sceneId": .int(4)])
            }
            try check(r, "toggle invalidates the scene") { try r.invoke("onOff", "toggle") }
            try check(r, "recallScene") {
                try r.invoke("scenesManagement", "recallScene", ["groupId": .int(1), "sceneId": .int(4)])
            }
        }
        guard lighting else { return }
        try check(r, "offWithEffect") {
            try r.invoke("onOff", "offWithEffect", ["effectIdentifier": .int(0), "effectVariant": .int(0)])
        }
        try check(r, "its fade") { r.advance(1000) }
        try check(r, "onWithTimedOff") {
            try r.invoke(
                "onOff", "onWithTimedOff", ["onOffControl": .int(0), "onTime": .int(10), "offWaitTime": .int(10)])
        }
        try check(r, "its countdown") { r.advance(1000) }
        try check(r, "timed off") { r.advance(1500) }
    }
}
