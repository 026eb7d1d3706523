// Placeholder until the MQTT adapter lands.
