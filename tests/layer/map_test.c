/* SPDX-License-Identifier: MIT */
/*
 * The layer's side-table hash map (layer/map.c): insert, replace, get and
 * backward-shift removal, checked against a plain array over many random
 * operations, with keys that collide (handles that differ only in high bits,
 * small counters, pointers).
 */
#include <stdint.h>
#include <stdlib.h>

#include "harness.h"
#include "map.h"
#include "xorshift.h"

#define KEYS 4096

static uint64_t rng = SB_XORSHIFT_SEED;

int
main(void)
{
	static uint64_t keys[KEYS];
	static void *model[KEYS]; /* value for keys[i], or NULL when absent */
	struct sbl_map map;

	sbl_map_init(&map);
	CHECK(sbl_map_get(&map, 1) == NULL, "empty map: get");
	CHECK(sbl_map_remove(&map, 1) == NULL, "empty map: remove");
	CHECK_EQ(sbl_map_put(&map, 0, &map), -EINVAL, "key 0 is reserved");

	for (int i = 0; i < KEYS; i++) {
		switch (i % 3) {
		case 0: keys[i] = (uint64_t)(i + 1); break;                 /* counters */
		case 1: keys[i] = ((uint64_t)i << 40) | 0x1000; break;      /* high bits only */
		default: keys[i] = (tb_xorshift64(&rng) | 1) & ~0xfull; break;      /* pointers */
		}
	}

	long mismatches = 0;
	uint32_t count = 0;
	for (long op = 0; op < 200000; op++) {
		int i = (int)(tb_xorshift64(&rng) % KEYS);
		int kind = (int)(tb_xorshift64(&rng) % 3);
		if (kind == 0) {
			void *v = (void *)(uintptr_t)(tb_xorshift64(&rng) | 1);
			if (sbl_map_put(&map, keys[i], v) < 0)
				mismatches++;
			if (!model[i])
				count++;
			model[i] = v;
		} else if (kind == 1) {
			void *got = sbl_map_remove(&map, keys[i]);
			if (got != model[i])
				mismatches++;
			if (model[i])
				count--;
			model[i] = NULL;
		} else if (sbl_map_get(&map, keys[i]) != model[i]) {
			mismatches++;
		}
		if (op % 10000 == 0) {
			for (int k = 0; k < KEYS; k++)
				if (sbl_map_get(&map, keys[k]) != model[k])
					mismatches++;
		}
	}
	CHECK_EQ(mismatches, 0, "map disagrees with the model");
	CHECK_EQ(map.count, count, "entry count");

	uint32_t seen = 0;
	sbl_map_foreach(&map, i)
		seen++;
	CHECK_EQ(seen, count, "foreach visits every entry once");

	for (int k = 0; k < KEYS; k++)
		sbl_map_remove(&map, keys[k]);
	CHECK_EQ(map.count, 0, "empty after removing everything");
	sbl_map_finish(&map);
	return tb_finish();
}
