#!/bin/sh
# memcheck.sh: stands in for a program under test (MAFSBXFS=this script,
# MEMCHECK_PROGRAM=the real binary) and runs it under valgrind memcheck.
# Any memcheck error, or a definitely lost block at exit, makes the program
# exit 99, which the mount tests' umount_fs reports as a failure; the full
# report is kept in MEMCHECK_LOGDIR (default /tmp), one file per process,
# and its summary goes to stderr (the daemon's log).
: "${MEMCHECK_PROGRAM:?MEMCHECK_PROGRAM must name the program to run}"
dir=${MEMCHECK_LOGDIR:-/tmp}
mkdir -p "$dir"
exec valgrind --tool=memcheck --error-exitcode=99 --leak-check=full \
	--errors-for-leak-kinds=definite --show-leak-kinds=definite \
	--track-fds=no --num-callers=30 --log-file="$dir/memcheck.%p.log" \
	"$MEMCHECK_PROGRAM" "$@"
