// Shared test fixtures (a private mosquitto broker, temporary sysfs trees) land here.
