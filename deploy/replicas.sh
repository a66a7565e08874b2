#!/bin/sh
# Brings up what TestReplicas tests, for a person to use: a PostgreSQL of its
# own (initdb in $DIR, listening only on a unix socket there), three
# `codecell serve --http` replicas on one data dir, and HAProxy in front of
# them with deploy/haproxy.cfg. Ctrl-C stops everything; the data stays in
# $DIR for the next run. `make replicas` runs it after building bin/codecell.
#
#   ADDR      where HAProxy listens (default 127.0.0.1:8080)
#   PORTS     the replicas' ports on 127.0.0.1 (default "8081 8082 8083")
#   DIR       PostgreSQL's cluster, the data dir, the config (default /tmp/codecell-replicas)
set -eu

ADDR=${ADDR:-127.0.0.1:8080}
PORTS=${PORTS:-8081 8082 8083}
DIR=${DIR:-/tmp/codecell-replicas}
BIN=$(cd "$(dirname "$0")/.." && pwd)/bin/codecell
HAPROXY_CFG=$(cd "$(dirname "$0")" && pwd)/haproxy.cfg
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[ -n "$PGBIN" ] || { echo "PostgreSQL not installed (apt-get install postgresql)" >&2; exit 1; }
command -v haproxy >/dev/null || { echo "HAProxy not installed (apt-get install haproxy)" >&2; exit 1; }
[ -x "$BIN" ] || { echo "$BIN missing: make build" >&2; exit 1; }

# PostgreSQL refuses to run as root: as root it runs as the postgres user.
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

mkdir -p "$DIR"
PGDIR=$DIR/pg
if [ ! -d "$PGDIR/data" ]; then
	mkdir -p "$PGDIR"
	[ "$(id -u)" = 0 ] && chown postgres: "$PGDIR"
	chmod 700 "$PGDIR"
	as_pg "$PGBIN/initdb" -D "$PGDIR/data" -U postgres -A trust -E UTF8 --locale=C >/dev/null
fi
as_pg "$PGBIN/pg_ctl" -D "$PGDIR/data" -l "$PGDIR/server.log" -w \
	-o "-k $PGDIR -c listen_addresses=" start >/dev/null
PIDS=""
stop() {
	trap - INT TERM EXIT
	for p in $PIDS; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	as_pg "$PGBIN/pg_ctl" -D "$PGDIR/data" -m fast -w stop >/dev/null || true
	echo "stopped; the data is kept in $DIR"
}
trap stop INT TERM EXIT
as_pg "$PGBIN/psql" -h "$PGDIR" -U postgres -tAc "SELECT 1 FROM pg_database WHERE datname = 'codecell'" | grep -q 1 ||
	as_pg "$PGBIN/createdb" -h "$PGDIR" -U postgres codecell

URL="postgres://postgres@/codecell?host=$PGDIR&sslmode=disable"
cat >"$DIR/codecell.json" <<JSON
{
  "sandbox": {"isolation": "production", "python": "/usr/bin/python3", "pool": 2},
  "store": {"url": "$URL"},
  "toolsets": ["all"]
}
JSON
mkdir -p "$DIR/data"

i=0
for port in $PORTS; do
	i=$((i + 1))
	"$BIN" serve --http "127.0.0.1:$port" --replica "r$i" --config "$DIR/codecell.json" \
		--data-dir "$DIR/data" 2>"$DIR/r$i.log" &
	PIDS="$PIDS $!"
	eval "CODECELL_R$i=127.0.0.1:$port"
	export "CODECELL_R$i"
done
for port in $PORTS; do
	n=0
	# python3, not curl: make deps installs the one, not the other.
	until python3 -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$port/readyz', timeout=15)" >/dev/null 2>&1; do
		n=$((n + 1))
		[ $n -lt 600 ] || { echo "replica on $port not ready; see $DIR/r*.log" >&2; exit 1; }
		sleep 0.2
	done
done
CODECELL_LB=$ADDR CODECELL_HEALTH_AUTH=none haproxy -db -f "$HAPROXY_CFG" >"$DIR/haproxy.log" 2>&1 &
PIDS="$PIDS $!"
echo "MCP endpoint: http://$ADDR/mcp (HAProxy; replicas on $PORTS; logs in $DIR)"
echo "Ctrl-C stops everything."
wait
