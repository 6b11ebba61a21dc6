#!/bin/bash
# egress.sh: allowlist egress through a real mount. The proxy image is built
# by `mafsbx mkimage --egress-proxy` under a unique tag; the outbound network
# is this test's own, with a busybox httpd on 443 as its only host. The mount
# (-o egress_proxy_image, -o egress_outbound_network) declares allowlist,
# serves an allowlist acquire, shows `egress: allowlist` in status and the
# proxy's decisions in NAME/egress (the responder's private address is
# DENY-NONGLOBAL: a mount never sets the proxy's test flag), refuses writes
# to NAME/egress, and rmdir removes workload, proxy and network.
. "$(dirname "$0")/lib.sh"
require_env
[ -n "${MAFSBX_CLI:-}" ] && [ -n "${MAFSBX_PROXY:-}" ] || fail "MAFSBX_CLI and MAFSBX_PROXY must be set"

TAG="mafsbxtest-egproxy-$SCOPE:latest"
NET="mafsbxtest-egnet-$SCOPE"
RESP="mafsbxtest-egresp-$SCOPE"
egress_cleanup() {
	docker rm -f "$RESP" >/dev/null 2>&1
	docker network rm "$NET" >/dev/null 2>&1
	docker rmi "$TAG" >/dev/null 2>&1
}
trap 'rc=$?; egress_cleanup; cleanup; exit $rc' EXIT

"$MAFSBX_CLI" mkimage --egress-proxy --proxy-program "$MAFSBX_PROXY" --tag "$TAG" >/dev/null ||
	fail "mkimage --egress-proxy"
docker network create --label mafsbxtest=1 "$NET" >/dev/null || fail "cannot create $NET"
docker run -d --name "$RESP" --label mafsbxtest=1 --network "$NET" "$IMAGE" \
	sh -c 'mkdir -p /www && echo hi > /www/i && exec httpd -f -p 443 -h /www' >/dev/null || fail "responder"

M=$T/mnt
mount_fs "$M" -o "egress_proxy_image=$TAG" -o "egress_outbound_network=$NET"

expect_contains "$(cat "$M/.ctl/declarations")" '"allowlist"' "declarations list allowlist"
acquire "$M" t a k ", \"egress\": \"allowlist\", \"egress_allow\": [\"$RESP\"]"
N=$SBX
expect_eq "$(jget "$(cat "$M/$N/status")" egress)" allowlist "status egress"
expect_eq "$(ls "$M/$N" | tr '\n' ' ')" "egress execs root status work " "ls NAME"
expect_eq "$(cat "$M/$N/egress")" "" "no decisions yet"

run_exec "$M" "$N" "p=\${HTTPS_PROXY#http://}; printf 'CONNECT $RESP:443 HTTP/1.1\\r\\n\\r\\n' | timeout 10 nc -w 3 \${p%:*} 3128; printf 'CONNECT other.example:443 HTTP/1.1\\r\\n\\r\\n' | timeout 10 nc -w 3 \${p%:*} 3128"
expect_eq "$CTL_STATUS" OK "exec through the proxy"
expect_contains "$(jget "$CTL_REPLY" stdout)" "403 Forbidden" "the proxy's answer"
expect_eq "$(cat "$M/$N/egress")" "DENY-NONGLOBAL $RESP:443
DENY other.example:443" "NAME/egress"
expect_errno "NAME/egress is read-only" EACCES write "$M/$N/egress" x

rmdir "$M/$N" || fail "rmdir $N"
docker inspect "$N" >/dev/null 2>&1 && fail "the workload survived rmdir"
docker inspect "$N-proxy" >/dev/null 2>&1 && fail "the proxy survived rmdir"
docker network inspect "$N-net" >/dev/null 2>&1 && fail "the network survived rmdir"
umount_fs "$M" "$DAEMON_PID"
log "ok"
