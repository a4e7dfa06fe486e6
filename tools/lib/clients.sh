# shellcheck shell=bash
# The clients test (deb-test-clients): drivers that do not take libpq's
# "mptcp" option, against our packages in a fresh chroot of the target suite
# (src/test/mptcp/clients/, guide/clients.md).
# Part of tools/workspace (sourced by it; see that file for the layout);
# uses deb.sh's chroot helpers.
#
# In the lab of "make deb-test" (src/test/mptcp/lab.sh, 2 paths; the server
# in a network namespace of its own, listen_mptcp = on, the clients in the
# lab's client namespace), each client reads pg_stat_mptcp for its own
# backend (mptcp true, 2 subflows), sums 100,000 rows it read (checked
# against the server's sum) and sends 588,895 bytes the server sums
# (checked against the sum made here):
#   pgx (Go)   Config.DialFunc with net.Dialer.SetMultipathTCP(true), built
#              in the chroot by Debian's golang-go from the Go module proxy
#              (go.sum pins every module); and with Go's default dialer:
#              plain TCP as it is, MPTCP with GODEBUG=multipathtcp=3
#   psycopg 3  Debian's python3-psycopg, which loads the system libpq5
#              (ours): mptcp=require in the conninfo
#   pg8000     pure Python, no MPTCP option: plain TCP as it is, MPTCP under
#              "mptcpize run" (Debian's mptcpize, an LD_PRELOAD library)
# Everything stays in $DEB_DIR/clients/ (the chroot is removed at the end).

CLIENTS_DIR=$DEB_DIR/clients
CLIENTS_PACKAGES="golang-go python3-psycopg python3-pg8000 mptcpize"

cmd_deb_test_clients() {
	deb_need_debian_major
	mkdir -p "$CLIENTS_DIR"
	deb_host_tools deb-test-clients
	deb_need_ours
	local start=$SECONDS rc=0
	# (deb.sh's helpers write their logs into $DEB_DIR: ours into clients/)
	DEB_DIR=$CLIENTS_DIR deb_chroot "$CLIENTS_DIR/root"
	unshare -m --propagation private "$TOP/tools/workspace" deb-test-clients-run 2>&1 | tee "$CLIENTS_DIR/test.log" || rc=1
	grep -q '^deb-test-clients: PASS' "$CLIENTS_DIR/test.log" || rc=1
	rm -rf "$CLIENTS_DIR/root"
	note "deb-test-clients took $((SECONDS - start)) s (log: $CLIENTS_DIR/test.log)"
	return $rc
}

clients_test_run() {
	local R=$CLIENTS_DIR/root lab=$CLIENTS_DIR/lab V=$MAJOR_NUMBER srv n=0
	local lab_sh=$TOP/src/test/mptcp/lab.sh src=$TOP/src/test/mptcp/clients
	deb_harness deb-test-clients clients_test_cleanup tools/lib/clients.sh
	psql_at() { in_root runuser -u postgres -- psql -X -q -At -v ON_ERROR_STOP=1 -p 5432 "$@"; }
	apt_in() { in_root env DEBIAN_FRONTEND=noninteractive apt-get -q -y -o Dpkg::Use-Pty=0 "$@" >>"$CLIENTS_DIR/apt.log" 2>&1; }
	: >"$CLIENTS_DIR/apt.log"
	local t0=$SECONDS
	step() { echo "# $* [at $((SECONDS - t0)) s]"; }

	step "1. our packages, a server with listen_mptcp = on in the lab, and the clients' packages"
	local debs=() ver p
	deb_copy_ours
	apt_in update
	# (apt takes what the packages need, postgresql-common and the rest,
	# from the archive; ours may be older than the archive's newest)
	apt_in install --no-install-recommends --allow-downgrades "${debs[@]}" $CLIENTS_PACKAGES ||
		fail "apt-get install (log: $CLIENTS_DIR/apt.log)"
	for p in libpq5 "postgresql-$V" "postgresql-client-$V"; do
		expect "$p is ours" "$(in_root dpkg-query -W -f='${Version}' "$p")" "$ver"
	done
	in_root pg_dropcluster --stop "$V" main 2>/dev/null || true
	in_root pg_createcluster "$V" main >/dev/null || fail "pg_createcluster $V main"
	in_root pg_conftool -s "$V" main set listen_addresses '*'
	in_root pg_conftool -s "$V" main set listen_mptcp on
	printf 'host all all 198.18.0.0/15 trust\n' >>"$R/etc/postgresql/$V/main/pg_hba.conf"
	in_server pg_ctlcluster "$V" main start || fail "pg_ctlcluster $V main start"
	expect "our server runs with listen_mptcp = on" "$(psql_at -c 'SHOW listen_mptcp')" on
	psql_at -c "CREATE EXTENSION mptcpinfo" \
		-c "CREATE TABLE items AS SELECT g AS id, md5(g::text) AS t FROM generate_series(1, 100000) g" ||
		fail "loading data"
	# What each client must read: the sum of "id:t\n" over the rows; and
	# what the server must get from each: the lines "1\n" .. "100000\n".
	local rows echo
	rows=$(psql_at -c "SELECT count(*) || ' ' || md5(string_agg(id || ':' || t || E'\\n', '' ORDER BY id)) FROM items")
	echo="$(seq 1 100000 | wc -c) $(seq 1 100000 | md5sum | cut -d' ' -f1)"
	expect "100,000 rows loaded (sum $rows)" "${rows%% *}" 100000

	step "2. pgx (Go): the default dialer, SetMultipathTCP(true) in Config.DialFunc, GODEBUG=multipathtcp=3"
	local gover pgxver
	gover=$(in_root go version)
	pgxver=$(sed -n 's/^require github.com\/jackc\/pgx\/v5 //p' "$src/pgx/go.mod")
	# Built by Debian's Go as an unprivileged user, the modules from the Go
	# module proxy (GOPROXY, default proxy.golang.org), checked against
	# go.sum (-mod=readonly: go.mod and go.sum as committed;
	# GOTOOLCHAIN=local: never another Go).  Go trusts the certificates
	# the host trusts (a host behind a TLS-inspecting proxy has its CA
	# there, the fresh chroot has only Debian's).
	local t=$SECONDS
	in_root useradd --create-home builder
	mkdir -p "$R/home/builder/pgx"
	cp "$src/pgx/main.go" "$src/pgx/go.mod" "$src/pgx/go.sum" "$R/home/builder/pgx/"
	cp /etc/ssl/certs/ca-certificates.crt "$R/home/builder/host-ca-certificates.crt"
	chroot "$R" chown -R builder: /home/builder/pgx
	in_root runuser -u builder -- env HOME=/home/builder GOTOOLCHAIN=local GOFLAGS=-mod=readonly \
		GOPROXY="${GOPROXY:-https://proxy.golang.org}" CGO_ENABLED=0 \
		SSL_CERT_FILE=/home/builder/host-ca-certificates.crt \
		${https_proxy:+https_proxy="$https_proxy"} ${HTTPS_PROXY:+HTTPS_PROXY="$HTTPS_PROXY"} \
		sh -c 'cd /home/builder/pgx && go build -trimpath -o pgx-client .' >"$CLIENTS_DIR/go-build.log" 2>&1 ||
		{ tail -20 "$CLIENTS_DIR/go-build.log"; fail "go build of src/test/mptcp/clients/pgx (log: $CLIENTS_DIR/go-build.log)"; }
	install -m 755 "$R/home/builder/pgx/pgx-client" "$R/usr/local/bin/pgx-client"
	ok "pgx $pgxver built by $gover ($((SECONDS - t)) s)"
	local conninfo="host=198.18.1.1 port=5432 dbname=postgres user=postgres connect_timeout=10"
	# client NAME EXPECT CMD...: run CMD in the lab's client namespace as
	# postgres; its "multipath" line must start with EXPECT, and its rows
	# and bytes must be the sums above.
	client() {
		local name=$1 want=$2 out got
		shift 2
		out=$(in_client runuser -u postgres -- "$@" 2>&1) || fail "$name: $(printf '%s' "$out" | tail -3)"
		printf '%s\n' "$out" | sed -n 's/^client /# client side: /p'
		got=$(printf '%s\n' "$out" | sed -n 's/^multipath \([a-z]* [^ ]*\).*/\1/p')
		case $got in
		"$want"*) ok "$name: pg_stat_mptcp says '$got'" ;;
		*) fail "$name: pg_stat_mptcp says '$got', expected '$want'" ;;
		esac
		expect "$name: the rows it read sum right" "$(printf '%s\n' "$out" | sed -n 's/^read //p')" "$rows"
		expect "$name: the bytes it sent sum right" "$(printf '%s\n' "$out" | sed -n 's/^echo //p')" "$echo"
	}
	client "pgx, Go's default dialer" "false" /usr/local/bin/pgx-client -mptcp=default "$conninfo"
	client "pgx, SetMultipathTCP(true) in Config.DialFunc" "true 2" /usr/local/bin/pgx-client -mptcp=on "$conninfo"
	client "pgx, Go's default dialer with GODEBUG=multipathtcp=3" "true 2" env GODEBUG=multipathtcp=3 /usr/local/bin/pgx-client -mptcp=default "$conninfo"

	step "3. psycopg 3 (python3-psycopg, the system libpq5): mptcp=require"
	mkdir -p "$R/usr/local/lib/clients"
	install -m 755 "$src/pyclient.py" "$R/usr/local/lib/clients/pyclient.py"
	client "psycopg, mptcp=require" "true 2" python3 /usr/local/lib/clients/pyclient.py psycopg "$conninfo mptcp=require"

	step "4. pg8000 (pure Python, no MPTCP option): as it is, then under mptcpize"
	client "pg8000 as it is" "false" python3 /usr/local/lib/clients/pyclient.py pg8000 "$conninfo"
	client "pg8000 under 'mptcpize run'" "true 2" mptcpize run python3 /usr/local/lib/clients/pyclient.py pg8000 "$conninfo"

	local v
	v=$(in_root dpkg-query -W -f='python3-psycopg ${Version}, python3-pg8000 ' python3-psycopg)
	v="$v$(in_root dpkg-query -W -f='${Version}, mptcpize ' python3-pg8000)"
	v="$v$(in_root dpkg-query -W -f='${Version}' mptcpize)"
	echo "deb-test-clients: PASS ($n checks: $PG_SOURCE_PACKAGE $ver, Debian $DEB_SUITE; pgx $pgxver with ${gover#go version }, $v)"
}

clients_test_cleanup() {
	local R=$1 lab=$2 srv=$3
	chroot "$R" pg_ctlcluster "$MAJOR_NUMBER" main stop -m immediate >/dev/null 2>&1 || true
	nsenter -t "$srv" -n "$TOP/src/test/mptcp/lab.sh" down "$lab" >/dev/null 2>&1 || true
	kill "$srv" 2>/dev/null || true
}
