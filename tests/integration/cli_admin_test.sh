#!/usr/bin/env bash
# matchmesh-cli as an operator: once a node checks tokens, `members` (like every store command
# and `dump`) is refused without an admin session and works with --admin-secret-file.
#   cli_admin_test.sh <matchmesh binary> <matchmesh-cli binary>
set -euo pipefail
node_binary=$1
cli_binary=$2
work=$(mktemp -d)
pid=""
cleanup() {
    if [ -n "$pid" ]; then
        { kill -KILL "$pid" && wait "$pid"; } 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "cli_admin_test: FAILED: $*" >&2; cat "$work/node.log" >&2; exit 1; }

printf 'admin-secret-for-the-cli-test-0123\n' >"$work/admin.txt"
cat >"$work/node.json" <<JSON
{"cluster": {"name": "cli", "secret": "cli-admin-test-secret-0123456789",
             "tokenSecret": "token-secret-for-the-cli-test-0123",
             "adminSecretFile": "$work/admin.txt"}}
JSON
"$node_binary" --config "$work/node.json" --id node-1 --mesh-listen 127.0.0.1:0 \
    --client-listen 127.0.0.1:0 --admin-listen none >"$work/node.out" 2>"$work/node.log" </dev/null &
pid=$!
for _ in $(seq 1 200); do
    grep -q "ready:" "$work/node.out" 2>/dev/null && break
    sleep 0.05
done
address=$(sed -n 's/.* client \([^ ]*\) .*/\1/p' "$work/node.out")
[ -n "$address" ] || fail "the node did not get ready"

status=0
"$cli_binary" --node "$address" members >"$work/refused.out" 2>&1 || status=$?
[ "$status" -eq 1 ] || fail "members without an admin session exited $status: $(cat "$work/refused.out")"
grep -q "forbidden" "$work/refused.out" || fail "no forbidden: $(cat "$work/refused.out")"

"$cli_binary" --node "$address" --admin-secret-file "$work/admin.txt" members >"$work/members.out" 2>&1 ||
    fail "members as an operator: $(cat "$work/members.out")"
grep -q "^node-1 " "$work/members.out" || fail "members listed: $(cat "$work/members.out")"
"$cli_binary" --node "$address" --admin-secret-file "$work/admin.txt" dump >"$work/dump.out" 2>&1 ||
    fail "dump as an operator: $(cat "$work/dump.out")"
grep -q "admin session for matchmesh-cli" "$work/node.log" || fail "the admin session was not logged"
echo "cli_admin_test: passed"
