/* model.c - placeholder until the export issue lands. */
#include "config.h"
#include "model.h"
