#!/usr/bin/env bash
# Makes sure the machine's own services (PostgreSQL, Redis, RabbitMQ, NATS JetStream)
# answer on their standard loopback ports, starting any that stopped with the
# commands this machine kind documents. Idempotent: running services are left
# alone. A service that cannot be started is reported; the tests that need it
# then skip (or fail under CI=true) with a message.
set -u

up() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

wait_port() {
	for _ in $(seq 1 50); do up "$1" && return 0; sleep 0.2; done
	return 1
}

ensure() {
	local name=$1 port=$2
	shift 2
	if up "$port"; then return 0; fi
	echo "base-services: $name is not answering on $port; starting it"
	"$@" >/dev/null 2>&1 || true
	wait_port "$port" || echo "base-services: could not start $name on 127.0.0.1:$port" >&2
}

if command -v pg_ctlcluster >/dev/null 2>&1; then
	ensure postgresql 5432 sh -c 'pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql | head -1) main start'
fi
if command -v redis-server >/dev/null 2>&1; then
	ensure redis 6379 redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no --dir /var/lib/redis --logfile /var/log/redis/ci.log
fi
if command -v rabbitmq-server >/dev/null 2>&1; then
	ensure rabbitmq 5672 rabbitmq-server -detached
fi
if command -v nats-server >/dev/null 2>&1; then
	ensure nats 4222 start-stop-daemon --start --oknodo --background --exec /usr/sbin/nats-server -- -a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server -l /var/log/nats-server.log
fi
exit 0
