/* SPDX-License-Identifier: MIT */
/*
 * Planted for the host test style-control (scripts/check-style.py --control):
 * planted_long is 81 lines from its first line to its closing brace, one over
 * the function limit; planted_short, at 80, is not reported. Their bodies are
 * comments: the length is what is planted, not code.
 * check-style expects: function:planted_long
 */
int planted_long(int x)
{
	/*
	 * line 4 of planted_long
	 * line 5 of planted_long
	 * line 6 of planted_long
	 * line 7 of planted_long
	 * line 8 of planted_long
	 * line 9 of planted_long
	 * line 10 of planted_long
	 * line 11 of planted_long
	 * line 12 of planted_long
	 * line 13 of planted_long
	 * line 14 of planted_long
	 * line 15 of planted_long
	 * line 16 of planted_long
	 * line 17 of planted_long
	 * line 18 of planted_long
	 * line 19 of planted_long
	 * line 20 of planted_long
	 * line 21 of planted_long
	 * line 22 of planted_long
	 * line 23 of planted_long
	 * line 24 of planted_long
	 * line 25 of planted_long
	 * line 26 of planted_long
	 * line 27 of planted_long
	 * line 28 of planted_long
	 * line 29 of planted_long
	 * line 30 of planted_long
	 * line 31 of planted_long
	 * line 32 of planted_long
	 * line 33 of planted_long
	 * line 34 of planted_long
	 * line 35 of planted_long
	 * line 36 of planted_long
	 * line 37 of planted_long
	 * line 38 of planted_long
	 * line 39 of planted_long
	 * line 40 of planted_long
	 * line 41 of planted_long
	 * line 42 of planted_long
	 * line 43 of planted_long
	 * line 44 of planted_long
	 * line 45 of planted_long
	 * line 46 of planted_long
	 * line 47 of planted_long
	 * line 48 of planted_long
	 * line 49 of planted_long
	 * line 50 of planted_long
	 * line 51 of planted_long
	 * line 52 of planted_long
	 * line 53 of planted_long
	 * line 54 of planted_long
	 * line 55 of planted_long
	 * line 56 of planted_long
	 * line 57 of planted_long
	 * line 58 of planted_long
	 * line 59 of planted_long
	 * line 60 of planted_long
	 * line 61 of planted_long
	 * line 62 of planted_long
	 * line 63 of planted_long
	 * line 64 of planted_long
	 * line 65 of planted_long
	 * line 66 of planted_long
	 * line 67 of planted_long
	 * line 68 of planted_long
	 * line 69 of planted_long
	 * line 70 of planted_long
	 * line 71 of planted_long
	 * line 72 of planted_long
	 * line 73 of planted_long
	 * line 74 of planted_long
	 * line 75 of planted_long
	 * line 76 of planted_long
	 * line 77 of planted_long
	 * line 78 of planted_long
	 */
	return x;
}

int planted_short(int x)
{
	/*
	 * line 4 of planted_short
	 * line 5 of planted_short
	 * line 6 of planted_short
	 * line 7 of planted_short
	 * line 8 of planted_short
	 * line 9 of planted_short
	 * line 10 of planted_short
	 * line 11 of planted_short
	 * line 12 of planted_short
	 * line 13 of planted_short
	 * line 14 of planted_short
	 * line 15 of planted_short
	 * line 16 of planted_short
	 * line 17 of planted_short
	 * line 18 of planted_short
	 * line 19 of planted_short
	 * line 20 of planted_short
	 * line 21 of planted_short
	 * line 22 of planted_short
	 * line 23 of planted_short
	 * line 24 of planted_short
	 * line 25 of planted_short
	 * line 26 of planted_short
	 * line 27 of planted_short
	 * line 28 of planted_short
	 * line 29 of planted_short
	 * line 30 of planted_short
	 * line 31 of planted_short
	 * line 32 of planted_short
	 * line 33 of planted_short
	 * line 34 of planted_short
	 * line 35 of planted_short
	 * line 36 of planted_short
	 * line 37 of planted_short
	 * line 38 of planted_short
	 * line 39 of planted_short
	 * line 40 of planted_short
	 * line 41 of planted_short
	 * line 42 of planted_short
	 * line 43 of planted_short
	 * line 44 of planted_short
	 * line 45 of planted_short
	 * line 46 of planted_short
	 * line 47 of planted_short
	 * line 48 of planted_short
	 * line 49 of planted_short
	 * line 50 of planted_short
	 * line 51 of planted_short
	 * line 52 of planted_short
	 * line 53 of planted_short
	 * line 54 of planted_short
	 * line 55 of planted_short
	 * line 56 of planted_short
	 * line 57 of planted_short
	 * line 58 of planted_short
	 * line 59 of planted_short
	 * line 60 of planted_short
	 * line 61 of planted_short
	 * line 62 of planted_short
	 * line 63 of planted_short
	 * line 64 of planted_short
	 * line 65 of planted_short
	 * line 66 of planted_short
	 * line 67 of planted_short
	 * line 68 of planted_short
	 * line 69 of planted_short
	 * line 70 of planted_short
	 * line 71 of planted_short
	 * line 72 of planted_short
	 * line 73 of planted_short
	 * line 74 of planted_short
	 * line 75 of planted_short
	 * line 76 of planted_short
	 * line 77 of planted_short
	 */
	return x;
}
