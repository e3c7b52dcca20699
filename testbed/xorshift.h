/* SPDX-License-Identifier: MIT */
/*
 * The tests' random numbers: Marsaglia's xorshift64 (13, 7, 17), seeded by
 * the caller, so that a run can be repeated exactly (a failing seed is a
 * reproducer). Not for anything but tests.
 */
#ifndef TB_XORSHIFT_H
#define TB_XORSHIFT_H

#include <stdint.h>

/* The usual seed (the golden ratio's 64 bits); any non-zero state works. */
#define SB_XORSHIFT_SEED UINT64_C(0x9e3779b97f4a7c15)

/* Advance *state and return it (never 0 from a non-zero state). */
static inline uint64_t
tb_xorshift64(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*state = x;
	return x;
}

#endif
