// src/test/mptcp/clients/pgx/main.go
//
// A pgx (Go) client that asks for Multipath TCP: pgx has no option for it,
// but its Config.DialFunc takes any dialer, and Go's net.Dialer has
// SetMultipathTCP (Go 1.21).  Used by "make deb-test-clients" (see
// tools/lib/clients.sh); guide/clients.md shows the same lines.
//
// Usage: pgx-client [-mptcp=on|off|default] CONNSTRING
//
// -mptcp=on (the default here) calls SetMultipathTCP(true), off calls
// SetMultipathTCP(false), default calls neither: then Go's default for
// dialers decides (plain TCP), which GODEBUG=multipathtcp=1 (dialers and
// listeners) or =3 (dialers only) turns to MPTCP without a code change.
//
// It prints what the client side sees (a "client" line: Go's version and
// TCPConn.MultipathTCP()), then three lines the test checks against the
// server:
//
//	multipath MPTCP SUBFLOWS  pg_stat_mptcp for this backend, after waiting up
//	                          to 10 s for a second subflow
//	read ROWS MD5             md5 of "id:t\n" for every row of items, read here
//	echo BYTES MD5            what the server computed from a parameter sent
//	                          from here: the lines "1\n" .. "100000\n"
package main

import (
	"context"
	"crypto/md5"
	"flag"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// The wait loop of "make deb-test": a join subflow follows the connection by
// a few milliseconds.
const waitSQL = `DO $$BEGIN FOR i IN 1..50 LOOP EXIT WHEN (SELECT subflows FROM pg_stat_mptcp WHERE pid = pg_backend_pid()) >= 2; PERFORM pg_sleep(0.2); END LOOP; END$$`
const statusSQL = `SELECT mptcp::text || ' ' || coalesce(subflows::text, '-') FROM pg_stat_mptcp WHERE pid = pg_backend_pid()`

func main() {
	mode := flag.String("mptcp", "on", "on: SetMultipathTCP(true); off: SetMultipathTCP(false); default: neither (GODEBUG=multipathtcp decides)")
	flag.Parse()
	if flag.NArg() != 1 || (*mode != "on" && *mode != "off" && *mode != "default") {
		fmt.Fprintln(os.Stderr, "usage: pgx-client [-mptcp=on|off|default] CONNSTRING")
		os.Exit(2)
	}
	if err := run(flag.Arg(0), *mode); err != nil {
		fmt.Fprintln(os.Stderr, "pgx-client:", err)
		os.Exit(1)
	}
}

func run(connString string, mode string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	cfg, err := pgx.ParseConfig(connString)
	if err != nil {
		return err
	}
	// What pgx's default dialer does, plus MPTCP.  If the kernel or the
	// server does not do MPTCP, the connection falls back to plain TCP.
	dialer := &net.Dialer{KeepAlive: 5 * time.Minute}
	switch mode {
	case "on":
		dialer.SetMultipathTCP(true)
	case "off":
		dialer.SetMultipathTCP(false)
	}
	cfg.DialFunc = dialer.DialContext

	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())

	// The client's own view of the socket (false where the connection is
	// not a *net.TCPConn: a Unix socket, or TLS)
	client := false
	if tc, ok := conn.PgConn().Conn().(*net.TCPConn); ok {
		client, _ = tc.MultipathTCP()
	}
	fmt.Printf("client pgx with %s, -mptcp=%s, GODEBUG=%q, Dialer.MultipathTCP() = %v, TCPConn.MultipathTCP() = %v\n",
		runtime.Version(), mode, os.Getenv("GODEBUG"), dialer.MultipathTCP(), client)

	if _, err := conn.Exec(ctx, waitSQL); err != nil {
		return err
	}
	var status string
	if err := conn.QueryRow(ctx, statusSQL).Scan(&status); err != nil {
		return err
	}
	fmt.Printf("multipath %s\n", status)

	// Rows read over the connection, summed here.
	rows, err := conn.Query(ctx, "SELECT id, t FROM items ORDER BY id")
	if err != nil {
		return err
	}
	h := md5.New()
	n := 0
	for rows.Next() {
		var id int64
		var t string
		if err := rows.Scan(&id, &t); err != nil {
			return err
		}
		fmt.Fprintf(h, "%d:%s\n", id, t)
		n++
	}
	if err := rows.Err(); err != nil {
		return err
	}
	fmt.Printf("read %d %x\n", n, h.Sum(nil))

	// Data sent over the connection, summed by the server.
	var b strings.Builder
	for i := 1; i <= 100000; i++ {
		b.WriteString(strconv.Itoa(i))
		b.WriteByte('\n')
	}
	var echo string
	if err := conn.QueryRow(ctx, "SELECT octet_length($1::text) || ' ' || md5($1::text)", b.String()).Scan(&echo); err != nil {
		return err
	}
	fmt.Printf("echo %s\n", echo)
	return nil
}
