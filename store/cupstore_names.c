/* cupstore_names.c - placeholder until the store lands. */
#include "config.h"
#include "cupstore.h"
