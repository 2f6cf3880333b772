/*
 * sim_args.h - the simulator's run settings that `cuptop demo` passes on
 * (devices, seconds, kernel rate): their ranges and their one parser.  The
 * simulator (CUPTOPSIM_DEVICES, CUPTOPSIM_RATES, cuptop-simapp --seconds)
 * and cuptop demo both call these, so a value one accepts the other
 * accepts too, and a bad one is refused once, by cuptop, as misuse.
 * No CUPTI here: cuptop links it whether or not the simulator is built.
 */
#ifndef SIM_ARGS_H
#define SIM_ARGS_H

#include <stddef.h>

#define SIM_ARGS_DEVICES_MAX 8          /* simulated devices, 1..8       */
#define SIM_ARGS_SECONDS_MAX 3600       /* run length, 0..3600 s          */
#define SIM_ARGS_RATE_MAX 1e9           /* operations per second, 0..1e9 */

#define SIM_ARGS_STR_(x) #x
#define SIM_ARGS_STR(x) SIM_ARGS_STR_(x)
/* What each accepts, for "VALUE is not ..." messages. */
#define SIM_ARGS_DEVICES_TEXT "a device count from 1 to " SIM_ARGS_STR(SIM_ARGS_DEVICES_MAX)
#define SIM_ARGS_SECONDS_TEXT "a number of seconds from 0 to " SIM_ARGS_STR(SIM_ARGS_SECONDS_MAX)
#define SIM_ARGS_RATE_TEXT "a rate from 0 to 1e9 per second"

/** Parse a device count (decimal, 1..SIM_ARGS_DEVICES_MAX).
 *  @return 0, or -1 (out untouched) when s is not one. */
int sim_args_devices(const char *s, unsigned *out);

/** Parse a run length in seconds (a decimal number, 0..SIM_ARGS_SECONDS_MAX).
 *  @return 0 or -1. */
int sim_args_seconds(const char *s, double *out);

/** Parse a rate (a decimal number, 0..SIM_ARGS_RATE_MAX) from the n bytes
 *  at s (not NUL-terminated: a value inside "kind=value,..."), all of them.
 *  @return 0 or -1. */
int sim_args_rate(const char *s, size_t n, double *out);

#endif /* SIM_ARGS_H */
