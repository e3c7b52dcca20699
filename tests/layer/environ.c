/* SPDX-License-Identifier: MIT */
/*
 * The app's environment stays as it was: the whole of environ, entry by
 * entry, before vkCreateInstance and after it returns (and after
 * vkCreateDevice), with the layer loaded implicitly and not disabled. On a
 * driver without venus the layer must not add, change or remove anything.
 *
 * --control: the same with SYNCBRIDGE_VENUS_FENCING=export, the layer's old
 * behaviour (venus_implicit_fencing=true set on any driver and left set):
 * the comparison must then find that entry, so it can fail.
 *
 * --expect-venus (the venus group): the layer must also have found the venus
 * device and set the option for its call down (its debug line), and the
 * environment must still be unchanged afterwards.
 */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "tbvk.h"

extern char **environ;

struct snapshot {
	char **entries; /* sorted copies, ours */
	size_t count;
};

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void
snapshot_take(struct snapshot *s)
{
	size_t n = 0;
	while (environ[n])
		n++;
	s->entries = calloc(n ? n : 1, sizeof(*s->entries));
	REQUIRE(s->entries, "out of memory");
	for (size_t i = 0; i < n; i++) {
		s->entries[i] = strdup(environ[i]);
		REQUIRE(s->entries[i], "out of memory");
	}
	s->count = n;
	qsort(s->entries, n, sizeof(*s->entries), cmp_str);
}

static void
snapshot_free(struct snapshot *s)
{
	for (size_t i = 0; i < s->count; i++)
		free(s->entries[i]);
	free(s->entries);
}

/* Entries in only one of the two (a changed value counts twice); notes each. */
static int
snapshot_diff(const struct snapshot *a, const struct snapshot *b, const char *when,
	      const char *look_for, bool *found)
{
	size_t i = 0, j = 0;
	int diffs = 0;
	while (i < a->count || j < b->count) {
		int c;
		if (i == a->count)
			c = 1;
		else if (j == b->count)
			c = -1;
		else
			c = strcmp(a->entries[i], b->entries[j]);
		if (c == 0) {
			i++, j++;
			continue;
		}
		const char *e = c < 0 ? a->entries[i++] : b->entries[j++];
		tb_note("%s: %s %s", when, c < 0 ? "gone:" : "new: ", e);
		if (c > 0 && strcmp(e, look_for) == 0)
			*found = true;
		diffs++;
	}
	return diffs;
}

int
main(int argc, char **argv)
{
	bool control = argc > 1 && strcmp(argv[1], "--control") == 0;
	bool expect_venus = argc > 1 && strcmp(argv[1], "--expect-venus") == 0;

	setenv("SYNCBRIDGE_DEBUG", "debug", 1);
	unsetenv("SYNCBRIDGE_DISABLE");
	unsetenv("SYNCBRIDGE_MODE");
	unsetenv("NO_SYNCBRIDGE");
	unsetenv("venus_implicit_fencing");
	if (control)
		setenv("SYNCBRIDGE_VENUS_FENCING", "export", 1);
	else
		unsetenv("SYNCBRIDGE_VENUS_FENCING");
	tbvk_env_activate(TBVK_ACTIVATE_IMPLICIT, NULL);

	struct snapshot before, after_instance, after_device;
	snapshot_take(&before);

	tbvk_capture_begin();
	VkInstance instance = tbvk_bare_instance(0, NULL);
	snapshot_take(&after_instance);

	VkPhysicalDevice pd = tbvk_first_physical(instance);
	REQUIRE(pd != VK_NULL_HANDLE, "no physical device");
	VkDevice device;
	REQUIRE(tbvk_bare_device(pd, &device) == VK_SUCCESS, "vkCreateDevice");
	snapshot_take(&after_device);
	vkDestroyDevice(device, NULL);
	vkDestroyInstance(instance, NULL);
	char *log = tbvk_capture_end();

	/* Without the layer in the chain the comparison would prove nothing. */
	CHECK_EQ(tbvk_count(log, "vkCreateInstance: " VKT_LAYER_NAME " loaded, mode transfers"),
		 1, "the layer was loaded and not disabled");
	bool found = false;
	int d1 = snapshot_diff(&before, &after_instance, "after vkCreateInstance",
			       "venus_implicit_fencing=true", &found);
	int d2 = snapshot_diff(&before, &after_device, "after vkCreateDevice",
			       "venus_implicit_fencing=true", &found);
	tb_note("%zu entries before; %d and %d differences after", before.count, d1, d2);
	int set_lines = tbvk_count(log, "set during vkCreateInstance venus_implicit_fencing=true");
	tb_note("the layer set the venus option for its call down %d time(s); Mesa's "
		     "notice printed %d time(s)", set_lines,
		     tbvk_count(log, "option venus_implicit_fencing overridden by environment"));
	if (expect_venus)
		CHECK_EQ(set_lines, 1, "venus found: the option set for the call down");
	if (control) {
		CHECK(found, "control: the comparison finds venus_implicit_fencing=true");
	} else {
		CHECK_EQ(d1, 0, "entries added, changed or removed by vkCreateInstance");
		CHECK_EQ(d2, 0, "entries added, changed or removed by vkCreateDevice");
	}
	free(log);
	snapshot_free(&before);
	snapshot_free(&after_instance);
	snapshot_free(&after_device);
	return tb_finish();
}
