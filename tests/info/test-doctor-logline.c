/* SPDX-License-Identifier: MIT */
/*
 * doctor reads the layer's per-device line (tools/info/doctor_logline.c):
 * active with its mode, pass-through with its reason, the right device among
 * several, and no match for another device, an older layer's lines or a
 * truncated line.
 */
#include <stdio.h>
#include <string.h>

#include "doctor.h"

static int failures;

static void
check(int cond, const char *what)
{
	printf("%s - %s\n", cond ? "ok" : "not ok", what);
	failures += !cond;
}

int
main(void)
{
	static const char log[] =
		"syncbridge: info: ../layer/layer.c:145: layer: vkCreateInstance: "
		"VK_LAYER_SYNCBRIDGE_implicit_sync active, mode transfers\n"
		"syncbridge: info: ../layer/layer.c:360: layer: device \"llvmpipe (LLVM 15)\": "
		"pass-through: the driver lacks VK_KHR_external_semaphore_fd\n"
		"syncbridge: info: ../layer/layer.c:358: layer: device \"Virtio-GPU Venus (x)\": "
		"active, mode transfers+venus\n";
	struct doctor_vk_layer l;

	memset(&l, 0, sizeof(l));
	check(doctor_layer_line_parse(log, "Virtio-GPU Venus (x)", &l), "venus: found");
	check(strcmp(l.state, "active") == 0 && strcmp(l.mode, "transfers+venus") == 0,
	      "venus: active, mode transfers+venus");
	memset(&l, 0, sizeof(l));
	check(doctor_layer_line_parse(log, "llvmpipe (LLVM 15)", &l), "lavapipe: found");
	check(strcmp(l.state, "pass-through") == 0 &&
		      strcmp(l.why, "the driver lacks VK_KHR_external_semaphore_fd") == 0,
	      "lavapipe: pass-through and why");
	check(!doctor_layer_line_parse(log, "llvmpipe", &l), "a name's prefix is not the device");
	check(!doctor_layer_line_parse("layer: device 0x1234: pass-through: x\n", "x", &l),
	      "an older layer's line (a pointer, at debug) is not read");
	check(!doctor_layer_line_parse("layer: device \"A\"", "A", &l), "a truncated line");
	printf("%s: %d failed\n", failures ? "FAIL" : "PASS", failures);
	return failures ? 1 : 0;
}
