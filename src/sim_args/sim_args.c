/* sim_args.c - the one parser of the simulator's run settings (sim_args.h). */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim_args.h"

int sim_args_devices(const char *s, unsigned *out)
{
    char *end;
    if (!s || *s < '0' || *s > '9')
        return -1;   /* no sign, no space: strtoul would take both */
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || *end || v < 1 || v > SIM_ARGS_DEVICES_MAX)
        return -1;
    *out = (unsigned)v;
    return 0;
}

/* A finite decimal number in [lo, hi], all n bytes of it. */
static int sim_args_number(const char *s, size_t n, double hi, double *out)
{
    char buf[64], *end;
    if (!s || n == 0 || n >= sizeof buf)
        return -1;
    memcpy(buf, s, n);
    buf[n] = '\0';
    if ((buf[0] < '0' || buf[0] > '9') && buf[0] != '.')
        return -1;   /* no sign, no space, no "inf"/"nan" */
    errno = 0;
    double v = strtod(buf, &end);
    if (errno || *end || !isfinite(v) || v < 0 || v > hi)
        return -1;
    *out = v;
    return 0;
}

int sim_args_seconds(const char *s, double *out)
{
    return sim_args_number(s, s ? strlen(s) : 0, SIM_ARGS_SECONDS_MAX, out);
}

int sim_args_rate(const char *s, size_t n, double *out)
{
    return sim_args_number(s, n, SIM_ARGS_RATE_MAX, out);
}
