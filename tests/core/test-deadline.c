/* SPDX-License-Identifier: MIT */
/*
 * Timeout arithmetic (src/core/util.h): relative timeouts become absolute
 * CLOCK_MONOTONIC deadlines and back.
 *  - SB_TIMEOUT_INFINITE → INT64_MAX ("none"), whose remaining time is -1;
 *  - 0 → now: nothing remains, so a wait only polls;
 *  - huge timeouts saturate at INT64_MAX instead of overflowing into the past;
 *  - a deadline in the past has 0 remaining, never a negative time (which
 *    poll() would read as "forever");
 *  - remaining(from_timeout(t)) == t for every finite t that fits.
 */
#include <stdint.h>
#include <time.h>

#include <syncbridge/common.h>

#include "harness.h"
#include "util.h"

#define MS INT64_C(1000000)
#define S INT64_C(1000000000)

static void
check_from_timeout(void)
{
	static const int64_t nows[] = { 0, 1, 12345 * S, INT64_MAX / 2, INT64_MAX - 10 };

	for (size_t i = 0; i < SB_ARRAY_SIZE(nows); i++) {
		int64_t now = nows[i];
		char what[128];

		snprintf(what, sizeof(what), "from_timeout(now=%lld, INFINITE)", (long long)now);
		CHECK_EQ(sb_deadline_from_timeout(now, SB_TIMEOUT_INFINITE), INT64_MAX, what);

		snprintf(what, sizeof(what), "from_timeout(now=%lld, 0)", (long long)now);
		CHECK_EQ(sb_deadline_from_timeout(now, 0), now, what);

		snprintf(what, sizeof(what), "from_timeout(now=%lld, INT64_MAX) saturates",
			 (long long)now);
		CHECK_EQ(sb_deadline_from_timeout(now, INT64_MAX), INT64_MAX, what);

		snprintf(what, sizeof(what), "from_timeout(now=%lld, INT64_MAX - now + 1) saturates",
			 (long long)now);
		if (now > 0)
			CHECK_EQ(sb_deadline_from_timeout(now, INT64_MAX - now + 1), INT64_MAX, what);
	}

	CHECK_EQ(sb_deadline_from_timeout(1000, 1), 1001, "from_timeout(1000, 1 ns)");
	CHECK_EQ(sb_deadline_from_timeout(5 * S, 300 * MS), 5 * S + 300 * MS,
		 "from_timeout(5 s, 300 ms)");
	/* Exactly reaching INT64_MAX is also "none": nothing later is representable. */
	CHECK_EQ(sb_deadline_from_timeout(INT64_MAX - 10, 10), INT64_MAX,
		 "from_timeout(INT64_MAX - 10, 10)");
	CHECK_EQ(sb_deadline_from_timeout(INT64_MAX - 10, 9), INT64_MAX - 1,
		 "from_timeout(INT64_MAX - 10, 9)");
	/* Ten years of nanoseconds from a realistic clock: no saturation, no overflow. */
	CHECK_EQ(sb_deadline_from_timeout(1000 * S, 10 * 365 * 86400 * S),
		 1000 * S + 10 * 365 * 86400 * S, "from_timeout(1000 s, 10 years)");
}

static void
check_remaining(void)
{
	int64_t now = 777 * S;

	CHECK_EQ(sb_deadline_remaining(now, INT64_MAX), -1, "remaining(none)");
	CHECK_EQ(sb_deadline_remaining(0, INT64_MAX), -1, "remaining(none) at t=0");
	CHECK_EQ(sb_deadline_remaining(now, now), 0, "remaining(deadline == now)");
	CHECK_EQ(sb_deadline_remaining(now, now + 1), 1, "remaining(now + 1 ns)");
	CHECK_EQ(sb_deadline_remaining(now, now + 250 * MS), 250 * MS, "remaining(now + 250 ms)");
	CHECK_EQ(sb_deadline_remaining(now, now - 1), 0, "remaining(1 ns in the past)");
	CHECK_EQ(sb_deadline_remaining(now, 0), 0, "remaining(deadline 0, long past)");
	CHECK_EQ(sb_deadline_remaining(INT64_MAX - 1, 0), 0, "remaining(now near INT64_MAX, 0)");
	CHECK_EQ(sb_deadline_remaining(now, INT64_MAX - 1), INT64_MAX - 1 - now,
		 "remaining(latest finite deadline)");
}

static void
check_round_trip(void)
{
	static const int64_t timeouts[] = { 0, 1, 999, MS, 300 * MS, S, 3600 * S,
					    INT64_MAX / 4 };
	int64_t now = sb_now_ns();

	for (size_t i = 0; i < SB_ARRAY_SIZE(timeouts); i++) {
		char what[96];
		int64_t d = sb_deadline_from_timeout(now, timeouts[i]);

		snprintf(what, sizeof(what), "remaining(from_timeout(now, %lld))",
			 (long long)timeouts[i]);
		CHECK_EQ(sb_deadline_remaining(now, d), timeouts[i], what);
	}
	CHECK_EQ(sb_deadline_remaining(now, sb_deadline_from_timeout(now, SB_TIMEOUT_INFINITE)), -1,
		 "remaining(from_timeout(now, INFINITE))");
	CHECK_EQ(sb_deadline_remaining(now, sb_deadline_from_timeout(now, INT64_MAX)), -1,
		 "remaining(from_timeout(now, INT64_MAX)): saturated means none");
}

static void
check_clock(void)
{
	int64_t a = sb_now_ns(), b = sb_now_ns();
	struct timespec ts;
	int64_t c;

	CHECK(a > 0, "sb_now_ns() = %lld, want > 0", (long long)a);
	CHECK(b >= a, "sb_now_ns() went backwards: %lld then %lld", (long long)a, (long long)b);

	/* It is CLOCK_MONOTONIC (what the kernel's sync_file timestamps use). */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	c = (int64_t)ts.tv_sec * S + ts.tv_nsec;
	CHECK(c >= b && c - b < 5 * S, "sb_now_ns() %lld vs CLOCK_MONOTONIC %lld", (long long)b,
	      (long long)c);

	/* A deadline just set has (almost) all of its time left; once past, none. */
	int64_t d = sb_deadline_from_timeout(sb_now_ns(), 10 * S);
	int64_t left = sb_deadline_remaining(sb_now_ns(), d);
	CHECK(left > 9 * S && left <= 10 * S, "10 s deadline: %lld ns left", (long long)left);
	d = sb_deadline_from_timeout(sb_now_ns(), 0);
	CHECK_EQ(sb_deadline_remaining(sb_now_ns(), d), 0, "timeout 0: nothing left");
}

int
main(void)
{
	check_from_timeout();
	check_remaining();
	check_round_trip();
	check_clock();
	return tb_finish();
}
