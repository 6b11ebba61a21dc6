# files_tables.sh: the tables of doc/upstream.md §9.3 (FILES_OUT), §9.4
# (FILES_IN) and §9.6 (FILES_DELETE) as a filesystem shows them, sourced by
# tests/mount/files.sh (one sandbox on one engine, either plane) and
# tests/cluster/spread.sh (a sandbox on each node of a swarm), after
# tests/mount/lib.sh. The caller sets N (the sandbox), W (its work/ through
# the mount), T (a scratch folder) and gsh NAME COMMAND (a root shell in the
# guest: docker exec on the engine that runs it), then calls files_layout,
# files_out, files_in and files_delete in that order on a fresh sandbox.
# shellcheck shell=bash
GW=/maf-sandbox/work
O=/maf-sandbox/work-outside

# The tables of doc/upstream.md §9.3 (FILES_OUT), §9.4 (FILES_IN) and §9.6
# (FILES_DELETE), every probe by its name, as a filesystem shows it: `pass`
# records a probe that held, and the walk at the end fails on any probe of a
# table that did not run (none is skipped, on either plane; the listing
# probes upstream skips on Docker included).
FILES_OUT_TABLE="a-legitimate-read-still-works a-link-is-named-a-link a-link-is-never-read
	stat-through-a-linked-parent read-through-a-linked-parent a-linked-working-directory
	a-linked-ancestor-of-the-working-directory a-plain-parent-is-not-an-escape listing-a-linked-directory
	listing-through-a-linked-parent listing-under-a-linked-ancestor a-listing-names-its-links"
FILES_IN_TABLE="a-write-lands-and-reads-back bytes-survive-the-round-trip str-content-is-utf8 a-second-write-replaces
	parents-are-created a-path-outside-is-refused a-path-through-a-linked-parent-is-refused
	a-linked-destination-is-refused-not-followed the-working-directory-is-refused a-backslash-is-refused
	a-linked-working-directory a-linked-ancestor-of-the-working-directory"
FILES_DELETE_TABLE="a-removal-removes a-missing-path-is-success a-link-is-removed-never-followed
	a-path-through-a-linked-parent-is-refused a-directory-needs-recursive an-empty-directory-needs-recursive
	recursive-removes-the-tree a-link-inside-a-recursive-removal-is-unlinked-not-followed
	the-working-directory-is-refused a-path-outside-is-refused"
pass() { PASSED="$PASSED$1:$2 "; }
walk_table() {
	local table=$1 names=$2 p n=0
	for p in $names; do
		case "$PASSED" in *" $table:$p "*) n=$((n + 1)) ;; *) fail "$table probe $p did not run" ;; esac
	done
	log "$table: $n probes held ($PLANE plane)"
}
# A working directory under W, as a shell in it: the mount never resolves a
# link for the kernel, so entering a linked one fails and nothing runs there.
in_dir() { local d=$1; shift; (cd "$d" 2>/dev/null && "$@") >/dev/null 2>&1; }

# files_layout: the hostile layout of doc/upstream.md §9.2 (a root guest),
# and no probe passed yet.
files_layout() {
	PASSED=" "
	gsh "$N" "mkdir -p $GW/real $O/sub && printf 'a legitimate output\n' > $GW/real/inside.txt &&
		printf 'not a directory\n' > $GW/plain.txt && echo 'the guest must not reach this' > $O/secret.txt &&
		cp $O/secret.txt $O/sub/leaf.txt && ln -s $O $GW/link-dir && ln -s $O/secret.txt $GW/link-file &&
		echo known > $O/target.txt" || fail "layout"
}

# files_out: FILES_OUT, and host tools through guest links never reach a host file.
files_out() {
	# FILES_OUT
	expect_eq "$(cat "$W/real/inside.txt")" "a legitimate output" "a-legitimate-read-still-works"
	expect_eq "$(stat -c '%F %s' "$W/real/inside.txt")" "regular file 20" "legitimate size"
	pass OUT a-legitimate-read-still-works
	expect_eq "$(stat -c %F "$W/link-file")" "symbolic link" "a-link-is-named-a-link"
	pass OUT a-link-is-named-a-link
	expect_errno "a-link-is-never-read" ELOOP read "$W/link-file"
	expect_errno "a-link-is-never-resolved" ELOOP readlink "$W/link-file"
	pass OUT a-link-is-never-read
	expect_errno "stat-through-a-linked-parent" ELOOP stat "$W/link-dir/secret.txt"
	pass OUT stat-through-a-linked-parent
	expect_errno "read-through-a-linked-parent" ELOOP read "$W/link-dir/secret.txt"
	pass OUT read-through-a-linked-parent
	in_dir "$W/link-dir" stat secret.txt && fail "a-linked-working-directory (stat)"
	in_dir "$W/link-dir" cat secret.txt && fail "a-linked-working-directory (read)"
	pass OUT a-linked-working-directory
	in_dir "$W/link-dir/sub" stat leaf.txt && fail "a-linked-ancestor-of-the-working-directory (stat)"
	in_dir "$W/link-dir/sub" cat leaf.txt && fail "a-linked-ancestor-of-the-working-directory (read)"
	pass OUT a-linked-ancestor-of-the-working-directory
	expect_errno "a-plain-parent-is-not-an-escape" ENOTDIR stat "$W/plain.txt/deeper.txt"
	pass OUT a-plain-parent-is-not-an-escape
	expect_errno "listing-a-linked-directory" ELOOP readdir "$W/link-dir"
	pass OUT listing-a-linked-directory
	expect_errno "listing-through-a-linked-parent" ELOOP readdir "$W/link-dir/sub"
	pass OUT listing-through-a-linked-parent
	in_dir "$W/link-dir/sub" ls . && fail "listing-under-a-linked-ancestor"
	pass OUT listing-under-a-linked-ancestor
	# The guest's own directory: every name, a link as a link (none declared or written here).
	ls -l "$W" 2>/dev/null | grep -q '^l.* link-file' || fail "a-listing-names-its-links: $(ls -l "$W" 2>&1)"
	ls -l "$W" 2>/dev/null | grep -q '^l.* link-dir' || fail "a-listing-names-its-links (link-dir)"
	expect_eq "$(ls "$W" | tr '\n' ' ')" "link-dir link-file plain.txt real " "the listing is the guest's directory"
	expect_eq "$(ls -a "$W/real" | tr '\n' ' ')" ". .. inside.txt " "a listing of a guest-made directory"
	pass OUT a-listing-names-its-links
	walk_table OUT "$FILES_OUT_TABLE"
	# Host tools through guest links never reach a host file (the host kernel
	# would resolve a target on the HOST, so none is ever given to it).
	gsh "$N" "ln -s /etc/shadow $GW/abs-link && ln -s ../../../../../../etc $GW/rel-link" || fail "links"
	for l in abs-link rel-link; do
		cat "$W/$l" >/dev/null 2>&1 && fail "cat through $l succeeded"
		cat "$W/$l/passwd" >/dev/null 2>&1 && fail "cat through $l/passwd succeeded"
		cp "$W/$l" "$T/cp-$l" 2>/dev/null && fail "cp of $l succeeded"
		[ -e "$T/cp-$l" ] && [ ! -L "$T/cp-$l" ] && fail "cp made a file from $l"
	done
	(cd "$M/$N" && tar cf "$T/t.tar" work/abs-link work/rel-link 2>/dev/null)
	tar tvf "$T/t.tar" 2>/dev/null | grep -q 'root:' && fail "tar stored host content"
	if find -L "$W" -name passwd 2>/dev/null | grep -q .; then fail "find -L reached a passwd"; fi
	# a tar of the whole work dir walks the guest's listing and stores nothing of O
	(cd "$M/$N" && tar cf "$T/w.tar" work 2>/dev/null)
	tar tvf "$T/w.tar" | grep -q 'work/real/inside.txt' || fail "tar of work/ missed real/inside.txt"
	tar tvf "$T/w.tar" | grep -q 'secret\|leaf.txt' && fail "tar of work/ stored something of O"

}

# files_in: FILES_IN.
files_in() {
	echo written >"$W/real/written.txt" || fail "a-write-lands"
	expect_eq "$(gsh "$N" "test -f $GW/real/written.txt && cat $GW/real/written.txt")" written "a-write-lands-and-reads-back"
	pass IN a-write-lands-and-reads-back
	printf 'ünïcödé→payload' >"$T/bytes"
	for i in $(seq 1 127); do printf "\\$(printf %o "$i")" >>"$T/bytes"; done
	cp "$T/bytes" "$W/bytes.bin" || fail "bytes write"
	cmp -s "$T/bytes" "$W/bytes.bin" || fail "bytes-survive-the-round-trip"
	gsh "$N" "cat $GW/bytes.bin" >"$T/bytes.back" && cmp -s "$T/bytes" "$T/bytes.back" ||
		fail "bytes-survive-the-round-trip (guest view)"
	pass IN bytes-survive-the-round-trip
	printf 'naïve' >"$W/str.txt" || fail "str write"
	expect_eq "$(gsh "$N" "cat $GW/str.txt")" "naïve" "str-content-is-utf8"
	pass IN str-content-is-utf8
	echo first >"$W/twice.txt" && echo second >"$W/twice.txt"
	expect_eq "$(gsh "$N" "cat $GW/twice.txt")" second "a-second-write-replaces"
	pass IN a-second-write-replaces
	mkdir -p "$W/deep/er/est" && echo leaf >"$W/deep/er/est/leaf.txt" || fail "parents-are-created (mkdir -p)"
	expect_eq "$(gsh "$N" "cat $GW/deep/er/est/leaf.txt")" leaf "parents-are-created"
	pass IN parents-are-created
	echo x >"$W/../work-outside/planted.txt" 2>/dev/null && fail "a-path-outside-is-refused"
	gsh "$N" "test ! -e $O/planted.txt" || fail "a-path-outside-is-refused (planted)"
	pass IN a-path-outside-is-refused
	expect_errno "a-path-through-a-linked-parent-is-refused" ELOOP write "$W/link-dir/landed.txt"
	gsh "$N" "test ! -e $O/landed.txt" || fail "something landed in O"
	pass IN a-path-through-a-linked-parent-is-refused
	expect_errno "a-linked-destination-is-refused-not-followed" ELOOP write "$W/link-file"
	expect_eq "$(gsh "$N" "cat $O/secret.txt")" "the guest must not reach this" "link target unchanged"
	pass IN a-linked-destination-is-refused-not-followed
	expect_errno "the-working-directory-is-refused" EISDIR write "$W"
	expect_eq "$(cat "$W/twice.txt")" second "the-working-directory-is-refused: a control file survives"
	pass IN the-working-directory-is-refused
	expect_errno "a-backslash-is-refused" EINVAL write "$W/sub\\file.txt"
	pass IN a-backslash-is-refused
	in_dir "$W/link-dir" sh -c 'echo x > landed.txt' && fail "a-linked-working-directory (write)"
	gsh "$N" "test ! -e $O/landed.txt" || fail "a-linked-working-directory: something landed in O"
	pass IN a-linked-working-directory
	in_dir "$W/link-dir/sub" sh -c 'echo x > landed.txt' && fail "a-linked-ancestor-of-the-working-directory (write)"
	gsh "$N" "test ! -e $O/sub/landed.txt" || fail "a-linked-ancestor-of-the-working-directory: landed in O/sub"
	pass IN a-linked-ancestor-of-the-working-directory
	expect_errno "mkdir over a file" EEXIST mkdir "$W/plain.txt"
	walk_table IN "$FILES_IN_TABLE"
}

# files_delete: FILES_DELETE.
files_delete() {
	echo t >"$W/target.txt" && echo b >"$W/bystander.txt"
	rm "$W/target.txt" || fail "a-removal-removes"
	gsh "$N" "test ! -e $GW/target.txt && test -e $GW/bystander.txt" || fail "a-removal-removes (guest view)"
	pass DELETE a-removal-removes
	rm -f "$W/target.txt" || fail "a-missing-path-is-success (rm -f)"
	rm -rf "$W/target.txt" || fail "a-missing-path-is-success (rm -rf)"
	expect_errno "removing a missing path" ENOENT unlink "$W/target.txt"
	pass DELETE a-missing-path-is-success
	gsh "$N" "ln -s $O/target.txt $GW/lnk1 && ln -s $O/target.txt $GW/lnk2" || fail "links for removal"
	rm "$W/lnk1" || fail "rm of a link"
	rm -r "$W/lnk2" || fail "rm -r of a link"
	expect_eq "$(gsh "$N" "cat $O/target.txt; test ! -e $GW/lnk1 && test ! -e $GW/lnk2 && echo gone")" "known
gone" "a-link-is-removed-never-followed"
	pass DELETE a-link-is-removed-never-followed
	expect_errno "a-path-through-a-linked-parent-is-refused (rm)" ELOOP unlink "$W/link-dir/target.txt"
	rm -r "$W/link-dir/target.txt" 2>/dev/null && fail "rm -r through a linked parent succeeded"
	gsh "$N" "test -e $O/target.txt" || fail "the target did not survive"
	pass DELETE a-path-through-a-linked-parent-is-refused
	mkdir "$W/dir" && echo c >"$W/dir/content"
	rm "$W/dir" 2>/dev/null && fail "a-directory-needs-recursive (rm)"
	expect_errno "a-directory-needs-recursive (rmdir)" ENOTEMPTY rmdir "$W/dir"
	expect_eq "$(cat "$W/dir/content")" c "content survives"
	# a guest-made one too: nothing of it was ever written through the mount
	gsh "$N" "mkdir -p $GW/gdir && echo c > $GW/gdir/content" || fail "guest dir"
	expect_errno "a-directory-needs-recursive (rmdir of a guest-made directory)" ENOTEMPTY rmdir "$W/gdir"
	expect_eq "$(cat "$W/gdir/content")" c "guest content survives"
	pass DELETE a-directory-needs-recursive
	gsh "$N" "mkdir -p $GW/empty" || fail "mkdir -p empty"
	rm "$W/empty" 2>/dev/null && fail "an-empty-directory-needs-recursive"
	gsh "$N" "test -d $GW/empty" || fail "an-empty-directory-needs-recursive: it did not survive"
	rm -r "$W/empty" || fail "rm -r of an empty directory"
	gsh "$N" "test ! -e $GW/empty" || fail "an-empty-directory-needs-recursive: rm -r left it"
	pass DELETE an-empty-directory-needs-recursive
	# made by the guest: rm -r sees its children through the listing
	gsh "$N" "mkdir -p $GW/tree/sub/deeper && echo l > $GW/tree/leaf.txt && echo d > $GW/tree/sub/deeper/d.txt &&
		touch $GW/tree/.hidden" && echo s >"$W/sibling.txt" || fail "tree"
	rm -r "$W/tree" || fail "recursive-removes-the-tree"
	gsh "$N" "test ! -e $GW/tree && test -e $GW/sibling.txt" || fail "recursive-removes-the-tree (guest view)"
	mkdir -p "$W/tree2/a" && echo l >"$W/tree2/a/leaf.txt" && rm -r "$W/tree2" || fail "rm -r of a tree written through the mount"
	gsh "$N" "test ! -e $GW/tree2" || fail "rm -r of a written tree (guest view)"
	pass DELETE recursive-removes-the-tree
	gsh "$N" "mkdir -p $GW/linked-tree/in && echo interior > $O/interior-target.txt &&
		ln -s $O/interior-target.txt $GW/linked-tree/inside-link && ln -s $O $GW/linked-tree/in/dir-link" ||
		fail "linked-tree"
	rm -r "$W/linked-tree" || fail "a-link-inside-a-recursive-removal"
	gsh "$N" "test ! -e $GW/linked-tree && test -e $O/interior-target.txt && test -e $O/secret.txt && test -d $O/sub" ||
		fail "a-link-inside-a-recursive-removal-is-unlinked-not-followed"
	pass DELETE a-link-inside-a-recursive-removal-is-unlinked-not-followed
	rmdir "$W" 2>/dev/null && fail "the-working-directory-is-refused (rmdir)"
	rm -r "$W/." 2>/dev/null && fail "the-working-directory-is-refused (rm -r)"
	gsh "$N" "test -d $GW && test -e $GW/sibling.txt" || fail "the working directory survives"
	pass DELETE the-working-directory-is-refused
	rm "$W/../work-outside/target.txt" 2>/dev/null && fail "a-path-outside-is-refused (rm)"
	rm -r "$W/../work-outside/target.txt" 2>/dev/null && fail "a-path-outside-is-refused (rm -r)"
	gsh "$N" "test -e $O/target.txt" || fail "outside target survives"
	pass DELETE a-path-outside-is-refused
	walk_table DELETE "$FILES_DELETE_TABLE"
}
