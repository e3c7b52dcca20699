/* SPDX-License-Identifier: MIT */
/*
 * Yes/no switches from the environment (SYNCBRIDGE_DISABLE and friends), read
 * the same way by the core, the side libraries, the layer and the programs.
 *
 * The Vulkan loader reads an implicit layer's disable_environment for
 * presence only, so "SYNCBRIDGE_DISABLE=0" once disabled the layer. Here a
 * switch has a value: 0/false/no/off/"" mean no, 1/true/yes/on mean yes.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <syncbridge/common.h>

#include "log.h"
#include "util.h"

static const char *const yes_words[] = { "1", "true", "yes", "on" };
static const char *const no_words[] = { "0", "false", "no", "off", "" };

/* Names whose odd value was logged already: a switch is read on every
 * vkCreateDevice or buffer queue, its warning belongs once in the log. */
#define WARNED_MAX 16
static const char *warned[WARNED_MAX];
static pthread_mutex_t warned_lock = PTHREAD_MUTEX_INITIALIZER;

static bool
in_list(const char *value, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcasecmp(value, list[i]) == 0)
			return true;
	return false;
}

static void
warn_once(const char *name, const char *value)
{
	bool first = true;

	pthread_mutex_lock(&warned_lock);
	for (size_t i = 0; i < WARNED_MAX && warned[i]; i++)
		first = first && strcmp(warned[i], name) != 0;
	if (first) {
		for (size_t i = 0; i < WARNED_MAX; i++) {
			if (!warned[i]) {
				warned[i] = name; /* callers pass string literals */
				break;
			}
		}
	}
	pthread_mutex_unlock(&warned_lock);
	if (first)
		sb_warn("%s=%s is not 1|true|yes|on or 0|false|no|off (caller); taken as yes",
			name, value);
}

bool
sb_env_get_bool(const char *name, bool fallback)
{
	const char *value = name ? getenv(name) : NULL;

	if (!value)
		return fallback;
	if (in_list(value, yes_words, SB_ARRAY_SIZE(yes_words)))
		return true;
	if (in_list(value, no_words, SB_ARRAY_SIZE(no_words)))
		return false;
	warn_once(name, value);
	return true;
}
