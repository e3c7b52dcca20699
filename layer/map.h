/* SPDX-License-Identifier: MIT */
/*
 * A small open-addressing hash map from a 64-bit key (a Vulkan handle or a
 * dispatch key) to a pointer. Key 0 (VK_NULL_HANDLE) is reserved as "empty".
 * Not thread safe: every map lives under its owner's mutex.
 */
#ifndef SBL_MAP_H
#define SBL_MAP_H

#include <stdbool.h>
#include <stdint.h>

struct sbl_map {
	uint64_t *keys;
	void **values;
	uint32_t capacity; /* a power of two, or 0 before the first insert */
	uint32_t count;
};

void sbl_map_init(struct sbl_map *map);
/* Frees the table, not the values. */
void sbl_map_finish(struct sbl_map *map);
/* The value stored for key, or NULL. */
void *sbl_map_get(const struct sbl_map *map, uint64_t key);
/* Insert or replace. Returns 0 or -ENOMEM (map unchanged), -EINVAL for key 0. */
int sbl_map_put(struct sbl_map *map, uint64_t key, void *value);
/* Remove key; returns the value it had, or NULL. */
void *sbl_map_remove(struct sbl_map *map, uint64_t key);

/* Iterate: for (uint32_t i = 0; i < map->capacity; i++) if (map->keys[i]) ... */
#define sbl_map_foreach(map, i) \
	for (uint32_t i = 0; i < (map)->capacity; i++) \
		if ((map)->keys[i])

#endif
