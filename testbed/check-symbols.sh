#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The ABI guard: what libsyncbridge.so exports is exactly what the version
# script lists, every name is sb_*, every one carries the version script's
# node, and the headers declare (SB_EXPORT) exactly that set too.
#
# A node whose name ends in _PRIVATE (libsyncbridge.sym's SYNCBRIDGE_PRIVATE:
# the core's internals that the side libraries call, src/core/private.h) is
# exported like the others but is not ABI: its names must not be declared in
# the public headers, and they are left out of the header comparison.
#
#   check-symbols.sh LIBRARY.so VERSION_SCRIPT.sym HEADER...
set -euo pipefail

fail=0
bad() { echo "not ok - $*"; fail=1; }
ok() { echo "ok - $*"; }

if [ $# -lt 2 ]; then
	echo "usage: $0 LIBRARY.so VERSION_SCRIPT.sym [HEADER...]" >&2
	exit 2
fi
lib=$1 sym=$2
shift 2
for f in "$lib" "$sym" "$@"; do
	[ -r "$f" ] || { echo "Bail out! cannot read $f"; exit 1; }
done
command -v nm >/dev/null || { echo "SKIP: nm (binutils) not installed"; exit 77; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# --- the version script: names under global:, and the version node(s) ---------
# Strip /* */ and # comments; a node is "NAME { ... };", names follow "global:".
perl -0777 -ne '
	s{/\*.*?\*/}{}gs;
	s{#[^\n]*}{}g;
	while (/([A-Za-z_][\w.]*)?\s*\{(.*?)\}/gs) {
		my ($node, $body) = ($1, $2);
		print "NODE $node\n" if defined $node;
		my $private = defined $node && $node =~ /_PRIVATE$/;
		my $g = 0;
		for my $t (split /[\s;]+/, $body) {
			next unless length $t;
			if ($t eq "global:") { $g = 1; next; }
			if ($t eq "local:") { $g = 0; next; }
			print "NAME $t\n" if $g;
			print "PRIVATE $t\n" if $g && $private;
		}
	}' "$sym" >"$tmp/sym.parsed"
sed -n 's/^NAME //p' "$tmp/sym.parsed" | sort -u >"$tmp/sym.names"
sed -n 's/^NODE //p' "$tmp/sym.parsed" | sort -u >"$tmp/sym.nodes"
sed -n 's/^PRIVATE //p' "$tmp/sym.parsed" | sort -u >"$tmp/sym.private"
# The public names: what the headers must declare.
comm -23 "$tmp/sym.names" "$tmp/sym.private" >"$tmp/sym.public"

if [ ! -s "$tmp/sym.names" ]; then
	bad "$sym lists no global symbols (parse error?)"
	exit 1
fi
if grep -q '[*?\[]' "$tmp/sym.names"; then
	bad "$sym has a wildcard under global: ($(grep '[*?\[]' "$tmp/sym.names" | tr '\n' ' ')): list every exported name so this test can compare"
	exit 1
fi
ok "$sym: $(wc -l <"$tmp/sym.public") public and $(wc -l <"$tmp/sym.private") private names, version node(s): $(tr '\n' ' ' <"$tmp/sym.nodes")"

# --- what the library exports ---------------------------------------------------
# "ADDR TYPE NAME[@@NODE]"; version nodes themselves appear as type A.
nm -D --defined-only "$lib" >"$tmp/nm"
awk '$2 != "A" { print $3 }' "$tmp/nm" | sort -u >"$tmp/lib.versioned"
sed 's/@.*//' "$tmp/lib.versioned" | sort -u >"$tmp/lib.names"
awk '$2 == "A" { print $3 }' "$tmp/nm" | sort -u >"$tmp/lib.abs"

if [ ! -s "$tmp/lib.names" ]; then
	bad "$lib exports nothing"
	exit 1
fi

# Every exported name is sb_*.
if grep -v '^sb_' "$tmp/lib.names" >"$tmp/foreign"; then
	bad "$lib exports names outside the sb_ namespace: $(tr '\n' ' ' <"$tmp/foreign")"
else
	ok "every exported symbol starts with sb_ ($(wc -l <"$tmp/lib.names") symbols)"
fi

# Absolute symbols may only be the version nodes.
if comm -23 "$tmp/lib.abs" "$tmp/sym.nodes" | grep -q .; then
	bad "$lib exports absolute symbols that are not version nodes: $(comm -23 "$tmp/lib.abs" "$tmp/sym.nodes" | tr '\n' ' ')"
fi

# The exported set equals the version script's list.
comm -23 "$tmp/sym.names" "$tmp/lib.names" >"$tmp/missing"
comm -13 "$tmp/sym.names" "$tmp/lib.names" >"$tmp/extra"
if [ -s "$tmp/missing" ]; then
	bad "listed in $(basename "$sym") but not exported (not defined? misspelt?): $(tr '\n' ' ' <"$tmp/missing")"
fi
if [ -s "$tmp/extra" ]; then
	bad "exported but not listed in $(basename "$sym"): $(tr '\n' ' ' <"$tmp/extra")"
fi
if [ ! -s "$tmp/missing" ] && [ ! -s "$tmp/extra" ]; then
	ok "exported set == $(basename "$sym") list"
fi

# Every export carries a version node of the script (when nm shows versions).
if grep -q '@' "$tmp/lib.versioned"; then
	unversioned=$(grep -v '@' "$tmp/lib.versioned" || true)
	wrong=$(grep '@' "$tmp/lib.versioned" | sed 's/.*@@*//' | sort -u | comm -23 - "$tmp/sym.nodes")
	if [ -n "$unversioned" ] || [ -n "$wrong" ]; then
		bad "symbol versions: unversioned: [${unversioned//$'\n'/ }], unknown nodes: [${wrong//$'\n'/ }]"
	else
		ok "every export is versioned with a node from $(basename "$sym")"
	fi
fi

# --- what the headers declare -------------------------------------------------------
if [ $# -gt 0 ]; then
	# "SB_EXPORT <type> [*]sb_name(" — the name is on the SB_EXPORT line.
	grep -h 'SB_EXPORT' "$@" | grep -v '#' |
		grep -oE '\bsb_[A-Za-z0-9_]+[[:space:]]*\(' | tr -d '( \t' | sort -u >"$tmp/hdr.names"
	comm -23 "$tmp/hdr.names" "$tmp/sym.public" >"$tmp/hdr.only"
	comm -13 "$tmp/hdr.names" "$tmp/sym.public" >"$tmp/sym.only"
	# Private names must stay out of the installed headers (any declaration).
	: >"$tmp/leaked"
	while read -r n; do
		if grep -qw -- "$n" "$@"; then echo "$n" >>"$tmp/leaked"; fi
	done <"$tmp/sym.private"
	if [ -s "$tmp/leaked" ]; then
		bad "private (_PRIVATE node) names appear in the public headers: $(tr '\n' ' ' <"$tmp/leaked")"
	elif [ -s "$tmp/sym.private" ]; then
		ok "no public header mentions the $(wc -l <"$tmp/sym.private") private names"
	fi
	if [ -s "$tmp/hdr.only" ]; then
		bad "declared SB_EXPORT in the headers but not in $(basename "$sym"): $(tr '\n' ' ' <"$tmp/hdr.only")"
	fi
	if [ -s "$tmp/sym.only" ]; then
		bad "in $(basename "$sym") but not declared SB_EXPORT in any public header: $(tr '\n' ' ' <"$tmp/sym.only")"
	fi
	if [ ! -s "$tmp/hdr.only" ] && [ ! -s "$tmp/sym.only" ]; then
		ok "public headers declare exactly the $(wc -l <"$tmp/hdr.names") listed functions"
	fi
fi

if [ $fail -ne 0 ]; then
	echo "FAIL: exported ABI does not match"
	exit 1
fi
echo "PASS"
