#ifndef HEARTH_GPIOD_API_H
#define HEARTH_GPIOD_API_H

// Which libgpiod API <gpiod.h> declares, as HEARTH_GPIOD_API (1 or 2).
//
// libgpiod 2 has no version macro, and both versions use the same include guard, so this looks for a macro only
// v1's header defines: GPIOD_LINE_BULK_MAX_LINES (v1.0 through v1.6; the v2 API has no line bulks).

#include <gpiod.h>

#if defined(GPIOD_LINE_BULK_MAX_LINES)
#define HEARTH_GPIOD_API 1
#else
#define HEARTH_GPIOD_API 2
#endif

#include "hearth_gpio.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/// Copies a C string that may be NULL into a fixed buffer, always NUL-terminated.
static inline void hearth_gpio_copy_name(char destination[HEARTH_GPIO_NAME_SIZE], const char *source) {
    snprintf(destination, HEARTH_GPIO_NAME_SIZE, "%s", source ? source : "");
}

/// Whether `flags` has only known bits, at most one bias, and at most one drive (none for an input), as both
/// libgpiod versions require; checked before calling either so that both reject the same requests with EINVAL.
static inline bool hearth_gpio_flags_valid(uint32_t flags, bool output) {
    const uint32_t drives = HEARTH_GPIO_FLAG_OPEN_DRAIN | HEARTH_GPIO_FLAG_OPEN_SOURCE;
    const uint32_t biases = HEARTH_GPIO_FLAG_BIAS_DISABLE | HEARTH_GPIO_FLAG_BIAS_PULL_DOWN
        | HEARTH_GPIO_FLAG_BIAS_PULL_UP;
    const uint32_t known = drives | biases | HEARTH_GPIO_FLAG_ACTIVE_LOW;
    uint32_t drive = flags & drives, bias = flags & biases;
    if (!output && drive != 0) return false;
    return (flags & ~known) == 0 && (drive & (drive - 1)) == 0 && (bias & (bias - 1)) == 0;
}

/// The errno of a failed call that may not have set one (a few libgpiod paths return NULL with errno 0).
static inline int hearth_gpio_errno_or(int fallback) {
    return errno != 0 ? errno : fallback;
}

#endif
