// libgpiod's own header, v1 or v2: only CGPIODShim includes it (through this module, for the include path and the
// link flag); Swift code uses CGPIODShim's version-neutral API.
#include <gpiod.h>
