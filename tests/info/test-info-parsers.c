/* SPDX-License-Identifier: MIT */
/*
 * syncbridge-info's parsers and writers on canned kernel text (host tier):
 *   trace-line   tracefs `trace` lines: columns, tgid, odd comms, non-event lines
 *   fence-fields dma_fence event fields, timelines with blanks
 *   model        tests/info/data/handoff-trace.txt: fences, tracks, lanes, waits, markers
 *   virgl        tests/info/data/virgl-cube-trace.txt (the cube demo on virgl, the GPU
 *                guest): fences numbered at emit, pending times, waits on them,
 *                arrays released without a signal
 *   syscalls     poll-family syscall lines: enter/exit pairs per thread
 *   bufinfo      debugfs dma_buf/bufinfo: the entry of one inode, its fences and devices
 *   fdinfo       /proc/PID/fdinfo of a dma-buf
 *   links        fd kinds from /proc/PID/fd links
 *   json         json-c output: escaping, invalid UTF-8 repaired, fixed decimals, null
 * Usage: test-info-parsers DATA_DIR [CASE]
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "json_out.h"
#include "procfs.h"
#include "trace_model.h"
#include "trace_output.h"

static const char *data_dir;

static char *
load(const char *name)
{
	char path[4096];
	char *text = NULL;
	int ret;

	snprintf(path, sizeof(path), "%s/%s", data_dir, name);
	ret = read_text_file(path, &text, NULL);
	REQUIRE(ret == 0, "read %s: %s", path, strerror(-ret));
	return text;
}

static void
test_trace_line(void)
{
	static const struct {
		const char *what, *line;
		const char *comm, *event, *data;
		int tid, tgid, cpu;
		int64_t ts_ns;
	} events[] = {
		{ "marker line",
		  "            bash-20058   (  20058) [001] ...1.  1018.137031: "
		  "tracing_mark_write: syncbridge: hello a=1",
		  "bash", "tracing_mark_write", "syncbridge: hello a=1", 20058, 20058, 1,
		  INT64_C(1018137031000) },
		/* no tgid column, no irq-info flags, a comm with '-' and blanks: the tid
		 * follows the last '-' */
		{ "line without tgid and flags",
		  "  kworker/u4:1-my thread-77 [000] 5.000001: dma_fence_signaled: "
		  "driver=vgem timeline=unbound context=3 seqno=1",
		  "kworker/u4:1-my thread", "dma_fence_signaled",
		  "driver=vgem timeline=unbound context=3 seqno=1", 77, -1, 0, INT64_C(5000001000) },
		/* unknown tgid "-------", unknown comm, nanosecond timestamp (9 digits) */
		{ "line with unknown tgid",
		  "           <...>-12      (-------) [003] d..2. 12.123456789: "
		  "dma_fence_destroy: driver=vgem timeline=unbound context=3 seqno=1",
		  "<...>", "dma_fence_destroy", "driver=vgem timeline=unbound context=3 seqno=1", 12,
		  -1, 3, INT64_C(12123456789) },
	};
	struct tr_line l;

	for (size_t i = 0; i < sizeof(events) / sizeof(events[0]); i++) {
		const char *what = events[i].what;

		CHECK_EQ(tr_line_parse(events[i].line, &l), 1, what);
		CHECK(strcmp(l.comm, events[i].comm) == 0, "%s: comm '%s'", what, l.comm);
		CHECK(strcmp(l.event, events[i].event) == 0, "%s: event '%s'", what, l.event);
		CHECK(strcmp(l.data, events[i].data) == 0, "%s: data '%s'", what, l.data);
		CHECK(l.tid == events[i].tid && l.tgid == events[i].tgid && l.cpu == events[i].cpu,
		      "%s: tid %d tgid %d cpu %d", what, l.tid, l.tgid, l.cpu);
		CHECK(l.ts_ns == events[i].ts_ns, "%s: timestamp %lld ns", what, (long long)l.ts_ns);
	}

	CHECK_EQ(tr_line_parse("# tracer: nop", &l), 0, "comment");
	CHECK_EQ(tr_line_parse("", &l), 0, "blank");
	CHECK_EQ(tr_line_parse("##### CPU 1 buffer started ####", &l), 0, "buffer note");
	CHECK_EQ(tr_line_parse("garbage without a timestamp", &l), -EINVAL, "garbage");
}

static void
test_fence_fields(void)
{
	char d[64], t[64];
	uint64_t c, s;

	CHECK_EQ(tr_fence_fields_parse("driver=vgem timeline=unbound context=12 seqno=1", d,
				       sizeof(d), t, sizeof(t), &c, &s),
		 0, "plain");
	CHECK(strcmp(d, "vgem") == 0 && strcmp(t, "unbound") == 0, "%s / %s", d, t);
	CHECK(c == 12 && s == 1, "context %llu seqno %llu", (unsigned long long)c,
	      (unsigned long long)s);
	CHECK_EQ(tr_fence_fields_parse("driver=virtio_gpu timeline=ring 0 context=7 seqno=4294967295",
				       d, sizeof(d), t, sizeof(t), &c, &s),
		 0, "timeline with a blank");
	CHECK(strcmp(t, "ring 0") == 0, "timeline '%s'", t);
	CHECK(s == 4294967295u, "seqno %llu", (unsigned long long)s);
	CHECK_EQ(tr_fence_fields_parse("driver=x timeline=y", d, sizeof(d), t, sizeof(t), &c, &s),
		 -EINVAL, "missing fields");
}

static const struct tr_fence *
find_fence(const struct tr_model *m, uint64_t context)
{
	for (size_t i = 0; i < m->nfences; i++)
		if (m->fences[i].context == context)
			return &m->fences[i];
	return NULL;
}

/* m: the model of text, finished, checked to finish and to have no malformed line. */
static void
model_of(struct tr_model *m, const char *text)
{
	tr_model_init(m);
	tr_model_feed_text(m, text);
	CHECK_EQ(tr_model_finish(m), 0, "finish");
	CHECK_EQ(m->malformed, 0, "malformed lines");
}

/*
 * virtio_gpu inits a fence with seqno 0 and numbers it at emit (trace_model.c,
 * renumber()): each of its fences is one fence with an init, an emit and a
 * signal, not an init "1:0" that never signals beside an emit born before the
 * trace. The first 250 lines of a trace of the cube demo on virgl (`--producer
 * gles --frames 24`, docs/inspect.md).
 */
static void
test_virgl(void)
{
	char *text = load("virgl-cube-trace.txt");
	struct tr_model m;
	size_t virtio = 0, numbered = 0, pending = 0, arrays = 0, released = 0, waits_on_gpu = 0;

	model_of(&m, text);
	free(text);
	for (size_t i = 0; i < m.nfences; i++) {
		const struct tr_fence *f = &m.fences[i];

		if (strcmp(f->driver, "virtio_gpu") == 0) {
			virtio++;
			CHECK(f->seqno != 0, "virtio_gpu fence %zu numbered (seqno %llu)", i,
			      (unsigned long long)f->seqno);
			numbered += f->init_ns != TR_NONE && f->emit_ns != TR_NONE &&
				    f->init_ns <= f->emit_ns;
			pending += f->signaled_ns != TR_NONE && f->emit_ns != TR_NONE &&
				   f->signaled_ns > f->emit_ns;
		}
		if (strcmp(f->driver, "dma_fence_array") == 0) {
			arrays++;
			if (f->signaled_ns == TR_NONE && f->destroy_ns != TR_NONE) {
				released++;
				CHECK_EQ(tr_fence_end(&m, f), f->destroy_ns,
					 "an array released unsignalled ends at its release");
			}
		}
	}
	for (size_t i = 0; i < m.nwaits; i++)
		waits_on_gpu += m.waits[i].fence >= 0 &&
				strcmp(m.fences[m.waits[i].fence].driver, "virtio_gpu") == 0;
	tb_note("virtio_gpu fences %zu (renumbered %lu), pending > 0: %zu; arrays %zu, "
		     "released unsignalled %zu; waits on virtio_gpu fences %zu",
		     virtio, m.renumbered, pending, arrays, released, waits_on_gpu);
	CHECK(virtio >= 20, "virtio_gpu fences: %zu", virtio);
	CHECK_EQ(m.renumbered, virtio, "every virtio_gpu fence was numbered at its emit");
	CHECK_EQ(numbered, virtio, "each has its init (by the submitter) and its emit");
	CHECK(pending >= 10, "fences with a pending time > 0: %zu", pending);
	CHECK(waits_on_gpu >= 1, "a dma_fence_wait on a virtio_gpu fence");
	CHECK(released >= 1, "an array released without a signal event");
	tr_model_free(&m);
}

static void
test_model(void)
{
	char *text = load("handoff-trace.txt");
	struct tr_model m;
	const struct tr_fence *f;
	struct tr_meta meta = { .tool_version = "test", .input = "handoff-trace.txt",
				.exit_status = -1, .clock = "mono" };
	char *out = NULL;
	size_t len = 0;
	FILE *mem;

	model_of(&m, text);
	free(text);
	CHECK_EQ(m.nfences, 8, "fences (including one only destroyed)");
	CHECK_EQ(m.ntracks, 3, "tracks: vgem, dma_fence_array, virtio_gpu");
	CHECK_EQ(tr_model_lost_events(&m), 0, "lost events");
	CHECK_EQ(m.begin_ns, INT64_C(100000000000), "begin = first event");

	f = find_fence(&m, 10);
	REQUIRE(f, "vgem fence 10");
	CHECK(f->init_ns == INT64_C(100000000000) && f->signaled_ns == INT64_C(100300000000),
	      "fence 10 init/signal times");
	CHECK(f->destroy_ns != TR_NONE, "fence 10 destroyed");
	CHECK(strcmp(m.threads[f->init_thread].comm, "producer") == 0, "created by producer");

	f = find_fence(&m, 13);
	REQUIRE(f, "vgem fence 13");
	CHECK(f->signaled_ns == TR_NONE, "fence 13 never signalled");
	CHECK_EQ(tr_fence_end(&m, f), m.end_ns, "unsignalled bar ends at the end");

	f = find_fence(&m, 3);
	REQUIRE(f, "destroy-only fence 3");
	CHECK(f->hidden && f->track == -1, "a fence only destroyed is hidden");

	f = find_fence(&m, 7);
	REQUIRE(f, "virtio_gpu fence 7");
	CHECK_EQ(tr_fence_start(&m, f), INT64_C(100120000000), "bar starts at emit, not init");
	CHECK(strcmp(f->timeline, "ring 0") == 0, "timeline '%s'", f->timeline);

	CHECK(find_fence(&m, 40)->lane != find_fence(&m, 41)->lane,
	      "overlapping fences of one timeline get different lanes");
	CHECK(find_fence(&m, 10)->lane == 0 && find_fence(&m, 11)->lane == 0,
	      "consecutive fences share a lane");

	CHECK_EQ(m.nwaits, 1, "waits");
	CHECK(m.waits[0].end_ns - m.waits[0].start_ns == INT64_C(290200000), "wait duration");
	CHECK(!m.waits[0].unfinished, "wait finished");
	CHECK(m.fences[m.waits[0].fence].context == 11, "wait is on fence 11");
	CHECK(find_fence(&m, 11)->enable_ns != TR_NONE, "enable_signal recorded");

	CHECK_EQ(m.nmarkers, 5, "markers (the non-syncbridge write is not one)");
	CHECK(strcmp(m.markers[0].name, "submit") == 0 && strcmp(m.markers[0].args, "frame=0") == 0,
	      "instant marker '%s' '%s'", m.markers[0].name, m.markers[0].args);
	CHECK(m.markers[4].span && strcmp(m.markers[4].name, "present") == 0 &&
		      m.markers[4].end_ns - m.markers[4].ts_ns == INT64_C(200000000),
	      "span marker");
	CHECK_EQ(m.unmatched_marker_ends, 0, "unmatched marker ends");

	/* the writers run and say something sensible */
	mem = open_memstream(&out, &len);
	REQUIRE(mem, "open_memstream");
	CHECK_EQ(tr_write_chrome_json(&m, &meta, mem), 0, "json writer");
	fclose(mem);
	CHECK(out && strstr(out, "\"traceEvents\":[") && strstr(out, "\"syncbridge\":{"),
	      "json has traceEvents and the summary");
	free(out);
	out = NULL;
	mem = open_memstream(&out, &len);
	REQUIRE(mem, "open_memstream");
	CHECK_EQ(tr_write_svg(&m, &meta, mem), 0, "svg writer");
	fclose(mem);
	CHECK(out && strncmp(out, "<?xml", 5) == 0 && strstr(out, "</svg>\n"), "svg framing");
	CHECK(out && strstr(out, "virtio_gpu / ring 0"), "svg labels the timelines");
	free(out);
	tr_model_free(&m);

	/* an empty trace still finishes and has a window */
	tr_model_init(&m);
	tr_model_feed_text(&m, "# tracer: nop\n#\n");
	CHECK_EQ(tr_model_finish(&m), 0, "empty trace");
	CHECK(m.nfences == 0 && m.end_ns >= m.begin_ns, "empty model");
	tr_model_free(&m);

	/* a wait that never ends, an end marker without a begin, lost events */
	tr_model_init(&m);
	tr_model_feed_text(&m,
			   "# entries-in-buffer/entries-written: 3/10   #P:2\n"
			   " a-1 (1) [000] ..... 1.0: dma_fence_wait_start: driver=d timeline=t context=1 seqno=1\n"
			   " a-1 (1) [000] ..... 2.0: tracing_mark_write: syncbridge: end nothing\n");
	CHECK_EQ(tr_model_finish(&m), 0, "finish");
	CHECK(m.nwaits == 1 && m.waits[0].unfinished && m.waits[0].end_ns == INT64_C(2000000000),
	      "open wait closed at the end");
	CHECK_EQ(m.unmatched_marker_ends, 1, "unmatched end");
	CHECK(m.nmarkers == 1 && strcmp(m.markers[0].name, "end nothing") == 0, "kept as instant");
	CHECK_EQ(tr_model_lost_events(&m), 7, "lost events from the header");
	tr_model_free(&m);
}

static void
test_syscalls(void)
{
	struct tr_model m;
	struct tr_line l;

	CHECK_EQ(tr_line_parse(" demo-7 (7) [001] ..... 3.5: sys_ppoll(ufds: 0x7ffe, nfds: 1, "
			       "tsp: 0, sigmask: 0, sigsetsize: 8)",
			       &l),
		 1, "syscall enter line");
	CHECK(strcmp(l.event, "sys_enter_ppoll") == 0, "event '%s'", l.event);
	CHECK(strncmp(l.data, "ufds: 0x7ffe", 12) == 0, "data '%s'", l.data);
	CHECK_EQ(tr_line_parse(" demo-7 (7) [001] ..... 3.6: sys_ppoll -> 0x1", &l), 1,
		 "syscall exit line");
	CHECK(strcmp(l.event, "sys_exit_ppoll") == 0 && strcmp(l.data, "0x1") == 0, "%s %s",
	      l.event, l.data);

	model_of(&m,
		 " demo-7 (7) [001] ..... 3.000000: sys_poll -> 0x0\n"
		 " demo-7 (7) [001] ..... 3.500000: sys_ppoll(ufds: 0x7ffe, nfds: 1)\n"
		 " demo-8 (7) [000] ..... 3.550000: sys_epoll_wait(epfd: 3)\n"
		 " demo-8 (7) [000] ..... 3.560000: sys_read(fd: 3)\n"
		 " demo-7 (7) [001] ..... 3.600000: sys_ppoll -> 0x1\n");
	CHECK_EQ(m.nblocks, 2, "ppoll and epoll_wait (read is not a blocking wait here)");
	CHECK(strcmp(m.blocks[0].name, "ppoll") == 0 && m.blocks[0].ret == 1 &&
		      m.blocks[0].end_ns - m.blocks[0].start_ns == INT64_C(100000000) &&
		      !m.blocks[0].unfinished,
	      "ppoll span of 100 ms returning 1");
	CHECK(strcmp(m.blocks[1].name, "epoll_wait") == 0 && m.blocks[1].unfinished &&
		      m.blocks[1].end_ns == m.end_ns,
	      "an epoll_wait still blocked at the end");
	CHECK_EQ(m.unmatched_syscall_exits, 1, "the exit of a poll entered before the trace");
	tr_model_free(&m);
}

/* Only the command's tree: its pid, then whatever it forks or clones. */
static void
test_follow(void)
{
	struct tr_model m;

	model_of(&m,
		 "# syncbridge-info: command pid 7\n"
		 " other-5 (5) [000] ..... 2.900000: sys_ppoll(ufds: 0x1, nfds: 1)\n"
		 " demo-7 (7) [001] ..... 3.000000: sched_process_fork: comm=demo pid=7 "
		 "child_comm=demo child_pid=8\n"
		 " other-5 (5) [000] ..... 3.100000: sched_process_fork: comm=other pid=5 "
		 "child_comm=other child_pid=9\n"
		 " demo-8 (8) [000] ..... 3.200000: sched_process_fork: comm=demo pid=8 "
		 "child_comm=demo child_pid=10\n"
		 " demo-10 (8) [000] ..... 3.300000: sys_poll(ufds: 0x2, nfds: 1)\n"
		 " other-9 (5) [000] ..... 3.400000: sys_poll(ufds: 0x3, nfds: 1)\n"
		 " demo-7 (7) [001] ..... 3.500000: sys_ppoll(ufds: 0x4, nfds: 1)\n"
		 " other-5 (5) [000] ..... 3.600000: sys_ppoll -> 0x1\n");
	CHECK_EQ(m.nfollowed, 3, "the command, its child and grandchild");
	CHECK_EQ(m.nblocks, 2, "the grandchild's poll and the command's ppoll");
	CHECK_EQ(m.unfollowed_syscalls, 3, "three events of other tasks dropped");
	CHECK_EQ(m.unmatched_syscall_exits, 0, "the other task's exit is not ours");
	tr_model_free(&m);

	/* without a command pid (a trace from elsewhere) everything is kept */
	tr_model_init(&m);
	tr_model_feed_text(&m, " other-5 (5) [000] ..... 2.9: sys_ppoll(ufds: 0x1, nfds: 1)\n");
	CHECK_EQ(tr_model_finish(&m), 0, "finish");
	CHECK_EQ(m.nblocks, 1, "kept");
	tr_model_free(&m);
}

static void
test_bufinfo(void)
{
	char *text = load("bufinfo.txt");
	struct bufinfo_entry e;

	CHECK_EQ(bufinfo_find(text, 12, &e), 0, "find inode 12");
	CHECK(e.found, "found");
	CHECK(e.size == 4096 && e.count == 3 && strcmp(e.exp_name, "vgem") == 0 && !e.name[0],
	      "row: %llu %lld %s '%s'", (unsigned long long)e.size, e.count, e.exp_name, e.name);
	CHECK_EQ(e.nfences, 2, "fences");
	CHECK(strcmp(e.fences[0].usage, "write") == 0 && !e.fences[0].signalled &&
		      strcmp(e.fences[0].driver, "vgem") == 0 &&
		      strcmp(e.fences[0].timeline, "unbound") == 0 && e.fences[0].seqno == 1,
	      "write fence");
	CHECK(strcmp(e.fences[1].usage, "read") == 0 && e.fences[1].signalled, "read fence");
	CHECK_EQ(e.ndevices, 0, "no devices");

	CHECK_EQ(bufinfo_find(text, 13, &e), 0, "find inode 13");
	CHECK(e.found && strcmp(e.name, "my buffer") == 0 && strcmp(e.exp_name, "udmabuf") == 0,
	      "named udmabuf row");
	CHECK(e.nfences == 1 && strcmp(e.fences[0].timeline, "ring 0") == 0 && e.fences[0].seqno == 41,
	      "timeline with a blank");
	CHECK(e.ndevices == 1 && strcmp(e.devices[0], "virtio0") == 0, "attached device");

	CHECK_EQ(bufinfo_find(text, 99, &e), 0, "absent inode");
	CHECK(!e.found, "not found");
	CHECK_EQ(bufinfo_find("nonsense\n", 12, &e), -EINVAL, "not bufinfo");
	free(text);
}

static void
test_fdinfo(void)
{
	char *text = load("fdinfo-dmabuf.txt");
	struct dmabuf_fdinfo fi;
	char v[16];

	CHECK_EQ(dmabuf_fdinfo_parse(text, &fi), 0, "parse");
	CHECK(fi.valid && fi.inode == 12 && fi.size == 4096 && fi.count == 3, "numbers");
	CHECK(strcmp(fi.exp_name, "vgem") == 0, "exp_name '%s'", fi.exp_name);
	CHECK(fi.has_name && strcmp(fi.name, "my buffer") == 0, "name '%s'", fi.name);
	CHECK_EQ(fi.flags, 02000002, "octal flags");
	CHECK(!fdinfo_get(text, "exp", v, sizeof(v)), "a key prefix does not match");
	free(text);
	CHECK_EQ(dmabuf_fdinfo_parse("pos:\t0\nflags:\t02\n", &fi), -EINVAL, "not a dma-buf");
}

static void
test_links(void)
{
	char buf[128];

	CHECK_EQ(fd_kind_from_link("anon_inode:sync_file"), FD_KIND_SYNC_FILE, "sync_file");
	CHECK_EQ(fd_kind_from_link("/dmabuf:"), FD_KIND_DMABUF, "unnamed dma-buf");
	CHECK_EQ(fd_kind_from_link("/dmabuf:my buffer"), FD_KIND_DMABUF, "named dma-buf");
	CHECK_EQ(fd_kind_from_link("anon_inode:syncobj_file"), FD_KIND_SYNCOBJ, "syncobj");
	CHECK_EQ(fd_kind_from_link("/dev/dri/card0"), FD_KIND_DRM, "drm");
	CHECK_EQ(fd_kind_from_link("pipe:[123]"), FD_KIND_OTHER, "pipe");
	CHECK(strcmp(fd_link_describe("pipe:[1]", buf, sizeof(buf)), "a pipe") == 0, "%s", buf);
	CHECK(strstr(fd_link_describe("anon_inode:[eventfd]", buf, sizeof(buf)), "eventfd"), "%s",
	      buf);
	CHECK(strcmp(fd_link_describe("/dev/null", buf, sizeof(buf)), "the file /dev/null") == 0,
	      "%s", buf);
}

static void
test_json(void)
{
	char *out = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&out, &len);
	struct json_object *o = json_object_new_object(), *a = json_object_new_array();

	REQUIRE(mem, "open_memstream");
	json_object_object_add(o, "q", info_json_str("a\"b\\c\n\x01"));
	json_object_object_add(o, "bad", info_json_str("x\xff\xc3(y"));
	json_object_object_add(o, "utf8", info_json_str("\xc3\xa9"));
	json_object_object_add(o, "path", info_json_str("/proc/1/fd/3"));
	json_object_array_add(a, json_object_new_int(-1));
	json_object_array_add(a, info_json_str(NULL));
	json_object_object_add(o, "a", a);
	json_object_object_add(o, "d", info_json_fixed(1.0 / 0.0, 3));
	json_object_object_add(o, "ms", info_json_fixed(2.5, 3));
	CHECK_EQ(info_json_write(o, mem, false), 0, "write");
	json_object_put(o);
	fclose(mem);
	/* invalid bytes become U+FFFD; '/' is not escaped; members keep their order */
	CHECK(strcmp(out, "{\"q\":\"a\\\"b\\\\c\\n\\u0001\",\"bad\":\"x\xef\xbf\xbd\xef\xbf\xbd(y\","
			  "\"utf8\":\"\xc3\xa9\",\"path\":\"/proc/1/fd/3\",\"a\":[-1,null],"
			  "\"d\":null,\"ms\":2.500}\n") == 0,
	      "got %s", out);
	free(out);
}

int
main(int argc, char **argv)
{
	static const struct {
		const char *name;
		void (*fn)(void);
	} cases[] = {
		{ "trace-line", test_trace_line }, { "fence-fields", test_fence_fields },
		{ "model", test_model },           { "syscalls", test_syscalls },
		{ "follow", test_follow },         { "bufinfo", test_bufinfo },
		{ "fdinfo", test_fdinfo },         { "links", test_links },
		{ "json", test_json },             { "virgl", test_virgl },
	};
	bool ran = false;

	if (argc < 2) {
		fprintf(stderr, "usage: %s DATA_DIR [CASE]\n", argv[0]);
		return 2;
	}
	data_dir = argv[1];
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (argc > 2 && strcmp(argv[2], cases[i].name) != 0)
			continue;
		tb_note("%s", cases[i].name);
		cases[i].fn();
		ran = true;
	}
	REQUIRE(ran, "no case named %s", argc > 2 ? argv[2] : "?");
	return tb_finish();
}
