// hearth_gpio.h over libgpiod 2.x (Debian trixie's 2.2.1, Raspberry Pi OS): a request is made from line settings,
// a line config and a request config, and lives apart from the chip object; edge events are read through an edge
// event buffer.
#include "gpiod_api.h"

#if HEARTH_GPIOD_API == 2

#include <stdlib.h>

_Static_assert((int)HEARTH_GPIO_EDGE_RISING == (int)GPIOD_EDGE_EVENT_RISING_EDGE, "v2 event type");
_Static_assert((int)HEARTH_GPIO_EDGE_FALLING == (int)GPIOD_EDGE_EVENT_FALLING_EDGE, "v2 event type");

struct hearth_gpio_chip {
    struct gpiod_chip *chip;
    char name[HEARTH_GPIO_NAME_SIZE];
    char label[HEARTH_GPIO_NAME_SIZE];
    unsigned int num_lines;
};

struct hearth_gpio_request {
    struct gpiod_line_request *request;
    unsigned int offset;
    /// Inputs only: where read events land.
    struct gpiod_edge_event_buffer *events;
};

/// The most events one read takes; more stay queued for the next.
enum { EVENT_BATCH = 16 };

int hearth_gpio_api_version(void) {
    return 2;
}

struct hearth_gpio_chip *hearth_gpio_chip_open(const char *path) {
    struct hearth_gpio_chip *chip = calloc(1, sizeof *chip);
    if (!chip) return NULL;
    errno = 0;
    chip->chip = gpiod_chip_open(path);
    struct gpiod_chip_info *info = chip->chip ? gpiod_chip_get_info(chip->chip) : NULL;
    if (!info) {
        int error = hearth_gpio_errno_or(ENODEV);
        gpiod_chip_close(chip->chip);
        free(chip);
        errno = error;
        return NULL;
    }
    hearth_gpio_copy_name(chip->name, gpiod_chip_info_get_name(info));
    hearth_gpio_copy_name(chip->label, gpiod_chip_info_get_label(info));
    chip->num_lines = (unsigned int)gpiod_chip_info_get_num_lines(info);
    gpiod_chip_info_free(info);
    return chip;
}

void hearth_gpio_chip_close(struct hearth_gpio_chip *chip) {
    if (!chip) return;
    gpiod_chip_close(chip->chip);
    free(chip);
}

const char *hearth_gpio_chip_name(const struct hearth_gpio_chip *chip) {
    return chip->name;
}

const char *hearth_gpio_chip_label(const struct hearth_gpio_chip *chip) {
    return chip->label;
}

unsigned int hearth_gpio_chip_num_lines(const struct hearth_gpio_chip *chip) {
    return chip->num_lines;
}

int hearth_gpio_chip_find_line(struct hearth_gpio_chip *chip, const char *name) {
    errno = 0;
    int offset = gpiod_chip_get_line_offset_from_name(chip->chip, name);
    if (offset < 0) errno = hearth_gpio_errno_or(ENOENT);
    return offset < 0 ? -1 : offset;
}

int hearth_gpio_chip_line_info(struct hearth_gpio_chip *chip, unsigned int offset,
                               struct hearth_gpio_line_info *info) {
    errno = 0;
    struct gpiod_line_info *line = gpiod_chip_get_line_info(chip->chip, offset);
    if (!line) {
        errno = hearth_gpio_errno_or(EIO);
        return -1;
    }
    memset(info, 0, sizeof *info);
    hearth_gpio_copy_name(info->name, gpiod_line_info_get_name(line));
    hearth_gpio_copy_name(info->consumer, gpiod_line_info_get_consumer(line));
    if (gpiod_line_info_is_active_low(line)) info->flags |= HEARTH_GPIO_FLAG_ACTIVE_LOW;
    switch (gpiod_line_info_get_drive(line)) {
    case GPIOD_LINE_DRIVE_OPEN_DRAIN: info->flags |= HEARTH_GPIO_FLAG_OPEN_DRAIN; break;
    case GPIOD_LINE_DRIVE_OPEN_SOURCE: info->flags |= HEARTH_GPIO_FLAG_OPEN_SOURCE; break;
    default: break;
    }
    switch (gpiod_line_info_get_bias(line)) {
    case GPIOD_LINE_BIAS_DISABLED: info->flags |= HEARTH_GPIO_FLAG_BIAS_DISABLE; break;
    case GPIOD_LINE_BIAS_PULL_UP: info->flags |= HEARTH_GPIO_FLAG_BIAS_PULL_UP; break;
    case GPIOD_LINE_BIAS_PULL_DOWN: info->flags |= HEARTH_GPIO_FLAG_BIAS_PULL_DOWN; break;
    default: break;
    }
    info->used = gpiod_line_info_is_used(line);
    info->output = gpiod_line_info_get_direction(line) == GPIOD_LINE_DIRECTION_OUTPUT;
    gpiod_line_info_free(line);
    return 0;
}

/// Applies the active-low, bias and drive bits of `flags` (already checked by hearth_gpio_flags_valid).
static int apply_flags(struct gpiod_line_settings *settings, uint32_t flags) {
    gpiod_line_settings_set_active_low(settings, (flags & HEARTH_GPIO_FLAG_ACTIVE_LOW) != 0);
    enum gpiod_line_bias bias = GPIOD_LINE_BIAS_AS_IS;
    if (flags & HEARTH_GPIO_FLAG_BIAS_DISABLE) bias = GPIOD_LINE_BIAS_DISABLED;
    if (flags & HEARTH_GPIO_FLAG_BIAS_PULL_UP) bias = GPIOD_LINE_BIAS_PULL_UP;
    if (flags & HEARTH_GPIO_FLAG_BIAS_PULL_DOWN) bias = GPIOD_LINE_BIAS_PULL_DOWN;
    enum gpiod_line_drive drive = GPIOD_LINE_DRIVE_PUSH_PULL;
    if (flags & HEARTH_GPIO_FLAG_OPEN_DRAIN) drive = GPIOD_LINE_DRIVE_OPEN_DRAIN;
    if (flags & HEARTH_GPIO_FLAG_OPEN_SOURCE) drive = GPIOD_LINE_DRIVE_OPEN_SOURCE;
    if (gpiod_line_settings_set_bias(settings, bias) < 0) return -1;
    return gpiod_line_settings_set_drive(settings, drive);
}

/// Requests the one line `offset` with `settings`; with `events`, also makes the buffer its edge events are read
/// into. Keeps the errno of whatever failed.
static struct hearth_gpio_request *request_line(struct hearth_gpio_chip *chip, unsigned int offset,
                                                const char *consumer, struct gpiod_line_settings *settings,
                                                bool events) {
    struct gpiod_line_config *line_config = NULL;
    struct gpiod_request_config *request_config = NULL;
    struct hearth_gpio_request *request = calloc(1, sizeof *request);
    int error = 0;
    errno = 0;
    if (!request) goto failed;
    request->offset = offset;
    line_config = gpiod_line_config_new();
    request_config = gpiod_request_config_new();
    if (!line_config || !request_config) goto failed;
    if (gpiod_line_config_add_line_settings(line_config, &offset, 1, settings) < 0) goto failed;
    gpiod_request_config_set_consumer(request_config, consumer);
    if (events) {
        request->events = gpiod_edge_event_buffer_new(EVENT_BATCH);
        if (!request->events) goto failed;
    }
    request->request = gpiod_chip_request_lines(chip->chip, request_config, line_config);
    if (!request->request) goto failed;
    gpiod_request_config_free(request_config);
    gpiod_line_config_free(line_config);
    return request;

failed:
    error = hearth_gpio_errno_or(ENOMEM);
    gpiod_request_config_free(request_config);
    gpiod_line_config_free(line_config);
    if (request) gpiod_edge_event_buffer_free(request->events);
    free(request);
    errno = error;
    return NULL;
}

/// New line settings for `flags` and `direction`, or NULL with errno.
static struct gpiod_line_settings *new_settings(uint32_t flags, bool output) {
    if (!hearth_gpio_flags_valid(flags, output)) {
        errno = EINVAL;
        return NULL;
    }
    errno = 0;
    struct gpiod_line_settings *settings = gpiod_line_settings_new();
    if (!settings) {
        errno = hearth_gpio_errno_or(ENOMEM);
        return NULL;
    }
    if (gpiod_line_settings_set_direction(settings, output ? GPIOD_LINE_DIRECTION_OUTPUT : GPIOD_LINE_DIRECTION_INPUT) < 0
        || apply_flags(settings, flags) < 0) {
        int error = hearth_gpio_errno_or(EINVAL);
        gpiod_line_settings_free(settings);
        errno = error;
        return NULL;
    }
    return settings;
}

struct hearth_gpio_request *hearth_gpio_request_output(struct hearth_gpio_chip *chip, unsigned int offset,
                                                       const char *consumer, uint32_t flags, int value) {
    struct gpiod_line_settings *settings = new_settings(flags, true);
    if (!settings) return NULL;
    struct hearth_gpio_request *request = NULL;
    if (gpiod_line_settings_set_output_value(settings, value ? GPIOD_LINE_VALUE_ACTIVE : GPIOD_LINE_VALUE_INACTIVE) == 0)
        request = request_line(chip, offset, consumer, settings, false);
    int error = errno;
    gpiod_line_settings_free(settings);
    errno = error;
    return request;
}

struct hearth_gpio_request *hearth_gpio_request_input(struct hearth_gpio_chip *chip, unsigned int offset,
                                                      const char *consumer, uint32_t flags) {
    struct gpiod_line_settings *settings = new_settings(flags, false);
    if (!settings) return NULL;
    struct hearth_gpio_request *request = NULL;
    // Timestamps on CLOCK_MONOTONIC, as the v1 binding gets them by default.
    if (gpiod_line_settings_set_edge_detection(settings, GPIOD_LINE_EDGE_BOTH) == 0
        && gpiod_line_settings_set_event_clock(settings, GPIOD_LINE_CLOCK_MONOTONIC) == 0)
        request = request_line(chip, offset, consumer, settings, true);
    int error = errno;
    gpiod_line_settings_free(settings);
    errno = error;
    return request;
}

void hearth_gpio_release(struct hearth_gpio_request *request) {
    if (!request) return;
    gpiod_line_request_release(request->request);
    gpiod_edge_event_buffer_free(request->events);
    free(request);
}

int hearth_gpio_get_value(struct hearth_gpio_request *request) {
    enum gpiod_line_value value = gpiod_line_request_get_value(request->request, request->offset);
    if (value == GPIOD_LINE_VALUE_ERROR) return -1;
    return value == GPIOD_LINE_VALUE_ACTIVE ? 1 : 0;
}

int hearth_gpio_set_value(struct hearth_gpio_request *request, int value) {
    return gpiod_line_request_set_value(request->request, request->offset,
                                        value ? GPIOD_LINE_VALUE_ACTIVE : GPIOD_LINE_VALUE_INACTIVE);
}

int hearth_gpio_event_fd(struct hearth_gpio_request *request) {
    if (!request->events) {
        errno = EPERM;  // an output: no events
        return -1;
    }
    return gpiod_line_request_get_fd(request->request);
}

int hearth_gpio_read_edge_events(struct hearth_gpio_request *request, struct hearth_gpio_edge_event *events,
                                 unsigned int max) {
    if (!request->events) {
        errno = EPERM;
        return -1;
    }
    unsigned int wanted = max < EVENT_BATCH ? max : EVENT_BATCH;
    if (wanted == 0) return 0;
    int count = gpiod_line_request_read_edge_events(request->request, request->events, wanted);
    if (count < 0) return -1;
    for (int i = 0; i < count; i++) {
        struct gpiod_edge_event *event = gpiod_edge_event_buffer_get_event(request->events, (unsigned long)i);
        events[i].timestamp_ns = gpiod_edge_event_get_timestamp_ns(event);
        events[i].edge = (int)gpiod_edge_event_get_event_type(event);
    }
    return count;
}

#endif
