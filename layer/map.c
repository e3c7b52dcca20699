/* SPDX-License-Identifier: MIT */
#include "map.h"

#include <errno.h>
#include <stdlib.h>

/* Handles are pointers or counters: mix the bits so both spread well. */
static uint32_t
hash_key(uint64_t key)
{
	key ^= key >> 33;
	key *= UINT64_C(0xff51afd7ed558ccd);
	key ^= key >> 33;
	key *= UINT64_C(0xc4ceb9fe1a85ec53);
	key ^= key >> 33;
	return (uint32_t)key;
}

void
sbl_map_init(struct sbl_map *map)
{
	map->keys = NULL;
	map->values = NULL;
	map->capacity = 0;
	map->count = 0;
}

void
sbl_map_finish(struct sbl_map *map)
{
	free(map->keys);
	free(map->values);
	sbl_map_init(map);
}

static uint32_t
find_slot(const struct sbl_map *map, uint64_t key)
{
	uint32_t mask = map->capacity - 1;
	uint32_t i = hash_key(key) & mask;

	while (map->keys[i] && map->keys[i] != key)
		i = (i + 1) & mask;
	return i;
}

void *
sbl_map_get(const struct sbl_map *map, uint64_t key)
{
	if (!map->capacity || !key)
		return NULL;
	uint32_t i = find_slot(map, key);
	return map->keys[i] == key ? map->values[i] : NULL;
}

static int
grow(struct sbl_map *map)
{
	uint32_t new_cap = map->capacity ? map->capacity * 2 : 16;
	struct sbl_map bigger = {
		.keys = calloc(new_cap, sizeof(uint64_t)),
		.values = calloc(new_cap, sizeof(void *)),
		.capacity = new_cap,
	};

	if (!bigger.keys || !bigger.values) {
		free(bigger.keys);
		free(bigger.values);
		return -ENOMEM;
	}
	sbl_map_foreach(map, i) {
		uint32_t j = find_slot(&bigger, map->keys[i]);
		bigger.keys[j] = map->keys[i];
		bigger.values[j] = map->values[i];
		bigger.count++;
	}
	free(map->keys);
	free(map->values);
	*map = bigger;
	return 0;
}

int
sbl_map_put(struct sbl_map *map, uint64_t key, void *value)
{
	if (!key)
		return -EINVAL;
	/* Keep the load factor under 3/4 so probes stay short. */
	if ((map->count + 1) * 4 > map->capacity * 3) {
		int ret = grow(map);
		if (ret < 0)
			return ret;
	}
	uint32_t i = find_slot(map, key);
	if (!map->keys[i]) {
		map->keys[i] = key;
		map->count++;
	}
	map->values[i] = value;
	return 0;
}

void *
sbl_map_remove(struct sbl_map *map, uint64_t key)
{
	if (!map->capacity || !key)
		return NULL;

	uint32_t mask = map->capacity - 1;
	uint32_t i = find_slot(map, key);
	if (map->keys[i] != key)
		return NULL;

	void *value = map->values[i];
	map->keys[i] = 0;
	map->values[i] = NULL;
	map->count--;

	/*
	 * Backward-shift deletion: move later entries of the probe run into the
	 * hole when their home slot is at or before it, so lookups never need
	 * tombstones.
	 */
	uint32_t hole = i;
	for (uint32_t j = (i + 1) & mask; map->keys[j]; j = (j + 1) & mask) {
		uint32_t home = hash_key(map->keys[j]) & mask;
		/* Is home cyclically outside (hole, j]? Then j may move to hole. */
		bool movable = hole <= j ? (home <= hole || home > j) : (home <= hole && home > j);
		if (movable) {
			map->keys[hole] = map->keys[j];
			map->values[hole] = map->values[j];
			map->keys[j] = 0;
			map->values[j] = NULL;
			hole = j;
		}
	}
	return value;
}
