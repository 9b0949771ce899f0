#!/usr/bin/env bash
# Make sure the real Postgres and Redis the tests use are up. Start them where they are
# installed but stopped; under CI=true a service that cannot be reached is an error.
set -u
pg_up() { pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; }
redis_up() { redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG; }

if ! pg_up && command -v pg_ctlcluster >/dev/null && [ -d /etc/postgresql ]; then
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start || true
fi
if ! redis_up && command -v redis-server >/dev/null; then
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no || true
fi
for _ in $(seq 1 30); do pg_up && redis_up && break; sleep 1; done

missing=""
pg_up || missing="$missing postgres"
redis_up || missing="$missing redis"
if [ -n "$missing" ]; then
  if [ "${CI:-}" = "true" ]; then
    echo "services not reachable:$missing (CI=true: this is a failure)" >&2
    exit 1
  fi
  echo "warning: services not reachable:$missing; integration tests will be skipped" >&2
fi
exit 0
