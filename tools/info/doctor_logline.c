/* SPDX-License-Identifier: MIT */
/*
 * The layer's per-device log line, as SYNCBRIDGE_DEBUG=info writes it:
 *   syncbridge: info: FILE:LINE: layer: device "NAME": active, mode MODE
 *   syncbridge: info: FILE:LINE: layer: device "NAME": pass-through: WHY
 * A file of its own so that the host test (test-doctor-logline.c) checks it
 * without a Vulkan driver.
 */
#include <stdio.h>
#include <string.h>

#include "doctor.h"

bool
doctor_layer_line_parse(const char *text, const char *name, struct doctor_vk_layer *l)
{
	static const char key[] = "layer: device \"";
	size_t len = strlen(name);

	for (const char *p = strstr(text, key); p; p = strstr(p + 1, key)) {
		const char *s = p + sizeof(key) - 1, *end;

		if (strncmp(s, name, len) != 0 || strncmp(s + len, "\": ", 3) != 0)
			continue;
		s += len + 3;
		end = strchr(s, '\n');
		if (!end)
			end = s + strlen(s);
		if (strncmp(s, "active, mode ", 13) == 0) {
			snprintf(l->state, sizeof(l->state), "active");
			snprintf(l->mode, sizeof(l->mode), "%.*s", (int)(end - s - 13), s + 13);
			snprintf(l->why, sizeof(l->why), "the layer's log: %.*s", (int)(end - s),
				 s);
			return true;
		}
		if (strncmp(s, "pass-through: ", 14) == 0) {
			snprintf(l->state, sizeof(l->state), "pass-through");
			snprintf(l->why, sizeof(l->why), "%.*s", (int)(end - s - 14), s + 14);
			return true;
		}
	}
	return false;
}
