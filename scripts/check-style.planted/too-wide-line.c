/* SPDX-License-Identifier: MIT */
/*
 * Planted for the host test style-control (scripts/check-style.py --control):
 * the line after the first 100-column one is 101 columns (its tab counts 8);
 * the box-drawing line is 100 characters, 300 bytes, and is not reported.
 * check-style expects: columns
 */
	int planted_wide_but_fine = 1; /* xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx */
	int planted_too_wide = 1; /* xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx */
/* ────────────────────────────────────────────────────────────────────────────────────────────── */
