// Small helpers shared by the shims.
#include "attache_codecs.h"

#include <stdlib.h>

void att_free(void *pointer) { free(pointer); }
