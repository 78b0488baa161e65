#include "stencilmap_xrt_standin.h"
