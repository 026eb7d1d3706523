import HearthEngine
import HearthHomeAssistant
import HearthModel
import Testing

/// A tunable-white light as a Home Assistant light with colour temperature in mireds (the template schema, as the
/// other lights, so commands stay Hearth requests and transitions work).
@Suite struct ColorTemperatureDiscoveryTests {
    let discovery = HomeAssistantDiscovery(options: options)

    func light(_ traits: [TraitConfiguration] = []) throws -> Parsed.Node {
        let home = try Home(devices: [
            DeviceConfiguration(id: "desk-strip", name: "Desk strip", roomID: "office",
                                types: [DeviceTypeConfiguration(.colorTemperatureLight, traits: traits)]),
        ], clock: ManualClock())
        let message = try #require(discovery.config(try home.view("desk-strip")))
        let json = try #require(Parsed.parse(message.payload))
        return try #require(json["components"]?["color_temperature_light-light"], "\(json["components"]?.keys ?? [])")
    }

    @Test func aColorTemperatureLightHasBrightnessAndColorTempInMireds() throws {
        let light = try light([TraitConfiguration(.colorControl, attributes: [
            "colorTempPhysicalMinMireds": .int(160), "colorTempPhysicalMaxMireds": .int(400),
        ])])
        #expect(light["platform"]?.string == "light")
        #expect(light["schema"]?.string == "template")
        #expect(light["name"] == .null)
        #expect(light["unique_id"]?.string == "hearth_pi__desk-strip__color_temperature_light-light")
        #expect(light["color_temp_template"]?.string
                == "{{ value_json.types[0].traits.colorControl.attributes.colorTemperatureMireds }}")
        #expect(light["min_mireds"] == .number(160))
        #expect(light["max_mireds"] == .number(400))
        #expect(light["brightness_template"]?.string?.contains("levelControl.attributes.currentLevel") == true)
        let on = try #require(light["command_on_template"]?.string)
        // A temperature alone on a lit light moves the temperature, with the transition in tenths.
        #expect(
            on.hasPrefix(
                "{%- if color_temp is defined and brightness is not defined and this.state == 'on' -%}"
                    + #"{"type":"ColorTemperatureLight","trait":"colorControl","command":"moveToColorTemperature","#
                        + #""args":"#
                    + #"{"colorTemperatureMireds":{{ [[color_temp | int, 0] | max, 65279] | min }},"#))
        #expect(
            on.contains(
                #""transitionTime":{{ [[(transition * 10) | round | int, 0] | max, 65534] | min if transition is "#
                    + #"defined else 0 }}}}"#
            ))
        // Anything else dims or turns on, as a DimmableLight does.
        #expect(
            on.contains(#"{"type":"ColorTemperatureLight","trait":"levelControl","command":"moveToLevelWithOnOff""#))
        #expect(on.contains(#"{"type":"ColorTemperatureLight","trait":"onOff","command":"on"}"#))
        #expect(
            light["command_off_template"]?.string
                == #"{"type":"ColorTemperatureLight","trait":"onOff","command":"off"}"#)
    }

    @Test func withoutAConfiguredRangeItIsTheDefaultStrips() throws {
        let light = try light()
        #expect(light["min_mireds"] == .number(153))
        #expect(light["max_mireds"] == .number(370))
    }

    @Test func aDimmableLightHasNoColorTemperature() throws {
        let home = try Home(devices: [
            DeviceConfiguration(id: "lamp", name: "Lamp", types: [DeviceTypeConfiguration(.dimmableLight)]),
        ], clock: ManualClock())
        let message = try #require(discovery.config(try home.view("lamp")))
        let json = try #require(Parsed.parse(message.payload))
        let light = try #require(json["components"]?["dimmable_light-light"])
        #expect(light["color_temp_template"] == nil)
        #expect(light["min_mireds"] == nil)
    }
}
