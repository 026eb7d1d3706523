import HearthEngine
import HearthHomeAssistant
import HearthModel
import Testing

/// A fan as a Home Assistant fan (percentage, or speeds on a fan with taps; Auto as a preset only where the fan has
/// it) and a window covering as a cover (position as percent open).
@Suite struct FanCoverDiscoveryTests {
    let discovery = HomeAssistantDiscovery(options: options)

    func component(_ id: String, _ type: DeviceTypeDescriptor, _ traits: [TraitConfiguration], key: String) throws
        -> Parsed.Node
    {
        let home = try Home(devices: [
            DeviceConfiguration(id: id, name: id, types: [DeviceTypeConfiguration(type, traits: traits)]),
        ], clock: ManualClock())
        let message = try #require(discovery.config(try home.view(id)))
        let json = try #require(Parsed.parse(message.payload))
        return try #require(json["components"]?[key], "\(json["components"]?.keys ?? [])")
    }

    @Test func aPWMFanSetsItsPercentage() throws {
        let fan = try component("office-fan", .fan, [], key: "fan-fan")
        #expect(fan["platform"]?.string == "fan")
        #expect(fan["name"] == .null)
        #expect(fan["unique_id"]?.string == "hearth_pi__office-fan__fan-fan")
        #expect(fan["state_value_template"]?.string
                == "{{ 'OFF' if value_json.types[0].traits.fanControl.attributes.fanMode == 'off' else 'ON' }}")
        #expect(
            fan["command_template"]?.string
                == #"{%- if value == 'ON' -%}{"type":"Fan","trait":"fanControl","update":{"fanMode":"on"}}"#
                + #"{%- else -%}{"type":"Fan","trait":"fanControl","update":{"fanMode":"off"}}{%- endif -%}"#)
        #expect(
            fan["percentage_value_template"]?.string
                == "{{ value_json.types[0].traits.fanControl.attributes.percentCurrent }}")
        #expect(fan["percentage_command_template"]?.string
                == #"{"type":"Fan","trait":"fanControl","update":{"percentSetting":{{ value | int }}}}"#)
        #expect(fan["speed_range_max"] == nil)
        #expect(fan["preset_modes"] == nil)
    }

    @Test func aFanOnTapsSetsItsSpeedAndAutoIsAPreset() throws {
        let fan = try component("bedroom-fan", .fan, [
            TraitConfiguration(.fanControl, features: ["multiSpeed", "auto"], attributes: ["speedMax": .int(3)]),
        ], key: "fan-fan")
        #expect(fan["speed_range_min"] == .number(1))
        #expect(fan["speed_range_max"] == .number(3))
        #expect(fan["percentage_command_template"]?.string
                == #"{"type":"Fan","trait":"fanControl","update":{"speedSetting":{{ value | int }}}}"#)
        #expect(fan["preset_modes"] == .array([.string("auto")]))
        #expect(
            fan["preset_mode_command_template"]?.string
                == #"{"type":"Fan","trait":"fanControl","update":{"fanMode":"auto"}}"#)
    }

    @Test func aWindowCoveringIsACoverInPercentOpen() throws {
        let cover = try component("living-blind", .windowCovering, [], key: "window_covering-cover")
        #expect(cover["platform"]?.string == "cover")
        #expect(cover["device_class"]?.string == "shade")
        #expect(
            cover["payload_open"]?.string == #"{"type":"WindowCovering","trait":"windowCovering","command":"upOrOpen"}"#
        )
        #expect(
            cover["payload_close"]?.string
                == #"{"type":"WindowCovering","trait":"windowCovering","command":"downOrClose"}"#)
        #expect(
            cover["payload_stop"]?.string
                == #"{"type":"WindowCovering","trait":"windowCovering","command":"stopMotion"}"#)
        #expect(
            cover["position_template"]?.string == "{% set p = value_json.types[0].traits.windowCovering.attributes."
                + "currentPositionLiftPercent100ths %}{{ (100 - ((p / 100) | round | int)) if p is not none else "
                    + "'None' }}")
        #expect(
            cover["set_position_template"]?.string == #"{"type":"WindowCovering","trait":"windowCovering","#
                + #""command":"goToLiftPercentage","args":{"liftPercent100thsValue":{{ (100 - ([[position | int, 0] | "#
                    + #"max, 100] | min)) * 100 }}}}"#
        )
        #expect(
            cover["value_template"]?.string?.contains("'opening' if s.liftOpening else 'closing' if s.liftClosing")
                == true)
    }
}
