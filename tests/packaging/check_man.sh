#!/bin/sh
# check_man.sh PAGE...: each manual page must render with `man --warnings -l`
# (groff -ww) without a single warning or error line, at the default width
# and at 80 columns.
set -u
command -v man >/dev/null 2>&1 || { echo "man(1) is not installed" >&2; exit 77; }
status=0
for page in "$@"; do
	for width in default 80; do
		if [ "$width" = default ]; then
			out=$(LC_ALL=C.UTF-8 man --warnings -l "$page" 2>&1 >/dev/null)
			rc=$?
		else
			out=$(LC_ALL=C.UTF-8 MANWIDTH=$width man --warnings -l "$page" 2>&1 >/dev/null)
			rc=$?
		fi
		if [ $rc -ne 0 ] || [ -n "$out" ]; then
			echo "FAIL: $page (width $width, exit $rc):" >&2
			printf '%s\n' "$out" >&2
			status=1
		fi
	done
	# A page that renders to nothing would pass the check above.
	lines=$(LC_ALL=C.UTF-8 MANWIDTH=80 man -l "$page" 2>/dev/null | wc -l)
	if [ "$lines" -lt 50 ]; then
		echo "FAIL: $page renders to only $lines lines" >&2
		status=1
	fi
done
[ $status -eq 0 ] && echo "man pages render without warnings: $*"
exit $status
