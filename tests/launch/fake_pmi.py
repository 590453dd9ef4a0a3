#!/usr/bin/env python3
"""A small PMI-1/PMI-2 launcher for knit's tests (test_launchers.sh).

    fake_pmi.py -n N [--mapping M] [--pmi 1|2] [--bad WHAT] -- program args...

Starts N copies of the program, each with PMI_FD (its end of a socketpair),
PMI_RANK, PMI_SIZE and PMI_JOBID, and serves the PMI wire protocols as
hydra and Slurm do: the "cmd=init" line, then PMI-1 lines or PMI-2 framed
messages.  PMI_process_mapping is M (default: every rank on one node), so
a test can place ranks on several "nodes" of one machine, which no real
launcher here can.  --pmi 1 answers a PMI-2 init with version 1.  --bad
makes the server misbehave once, to check that knit says so and ends:
  init      garbage instead of the init answer
  kvsname   a get_my_kvsname answer without the name (PMI-1)
  fence     the socket closed at the fence
  mapping   a PMI_process_mapping that does not parse
  value     a get answer without its value
A rank that exits nonzero, or asks to abort, ends the job: the others get
SIGTERM, then SIGKILL; the exit status is the first failure's (or 0).
"""
import argparse
import os
import select
import signal
import socket
import subprocess
import sys
import time


def frame(body):
    return b"%-6d" % len(body) + body


def v2_parse(body):
    out, key, cur, i = {}, None, b"", 0
    while i < len(body):
        c = body[i:i + 1]
        if c == b";" and body[i + 1:i + 2] == b";":
            cur += b";"
            i += 2
            continue
        if c == b"=" and key is None:
            key, cur = cur, b""
        elif c == b";":
            if key is not None:
                out[key.decode()] = cur.decode()
            key, cur = None, b""
        else:
            cur += c
        i += 1
    return out


def v1_parse(line):
    out = {}
    for word in line.split():
        if "=" in word:
            k, v = word.split("=", 1)
            out[k] = v
    return out


class Rank:
    def __init__(self, rank, sock, proc):
        self.rank, self.sock, self.proc = rank, sock, proc
        self.buf, self.version, self.inited = b"", 1, False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, required=True)
    ap.add_argument("--mapping")
    ap.add_argument("--pmi", type=int, default=2)
    ap.add_argument("--bad", default="")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
    n = a.n
    mapping = a.mapping or "(vector,(0,1,%d))" % n
    if a.bad == "mapping":
        mapping = "(vector,(0,x"
    kvs, fenced, ranks = {}, [], []
    for r in range(n):
        mine, theirs = socket.socketpair()
        env = dict(os.environ, PMI_FD=str(theirs.fileno()), PMI_RANK=str(r), PMI_SIZE=str(n), PMI_JOBID="7.0")
        p = subprocess.Popen(cmd, env=env, pass_fds=[theirs.fileno()])
        theirs.close()
        ranks.append(Rank(r, mine, p))
    status, bad_done, aborted = None, False, False

    def send(rk, data):
        try:
            rk.sock.sendall(data)
        except OSError:
            pass

    def reply(rk, fields):
        if rk.version == 2:
            body = "".join("%s=%s;" % (k, str(v).replace(";", ";;")) for k, v in fields)
            send(rk, frame(body.encode()))
        else:
            send(rk, (" ".join("%s=%s" % (k, v) for k, v in fields) + "\n").encode())

    def handle(rk, msg):
        nonlocal bad_done, aborted
        cmd_ = msg.get("cmd", "")
        bad = a.bad if not bad_done else ""
        if cmd_ == "init":
            want = int(msg.get("pmi_version", "1"))
            rk.version = 2 if want == 2 and a.pmi == 2 else 1
            if bad == "init":
                bad_done = True
                send(rk, b"hello world\n")
                return
            send(rk, b"cmd=response_to_init pmi_version=%d pmi_subversion=%d rc=0\n"
                 % (rk.version, 0 if rk.version == 2 else 1))
        elif cmd_ == "fullinit":
            reply(rk, [("cmd", "fullinit-response"), ("rc", 0), ("pmi-version", 2), ("pmi-subversion", 0),
                       ("rank", rk.rank), ("size", n), ("appnum", 0), ("debugged", "FALSE"),
                       ("pmiverbose", "FALSE")])
        elif cmd_ == "get_maxes":
            reply(rk, [("cmd", "maxes"), ("kvsname_max", 256), ("keylen_max", 64), ("vallen_max", 1024), ("rc", 0)])
        elif cmd_ == "get_my_kvsname":
            if bad == "kvsname":
                bad_done = True
                reply(rk, [("cmd", "my_kvsname"), ("rc", 0)])
            else:
                reply(rk, [("cmd", "my_kvsname"), ("kvsname", "kvs_7_0"), ("rc", 0)])
        elif cmd_ in ("put", "kvs-put"):
            kvs[msg["key"]] = msg["value"]
            reply(rk, [("cmd", "put_result" if rk.version == 1 else "kvs-put-response"), ("rc", 0)])
        elif cmd_ in ("barrier_in", "kvs-fence"):
            if bad == "fence":
                bad_done = True
                rk.sock.close()
                return
            fenced.append(rk)
            if len(fenced) == n:
                for f in fenced:
                    if f.version == 2:
                        reply(f, [("cmd", "kvs-fence-response"), ("rc", 0)])
                    else:
                        reply(f, [("cmd", "barrier_out"), ("rc", 0)])
                fenced.clear()
        elif cmd_ in ("get", "kvs-get", "info-getjobattr"):
            key = msg.get("key", "")
            val = mapping if key == "PMI_process_mapping" else kvs.get(key)
            name = {"get": "get_result", "kvs-get": "kvs-get-response",
                    "info-getjobattr": "info-getjobattr-response"}[cmd_]
            if bad == "value" and key != "PMI_process_mapping":
                bad_done = True
                reply(rk, [("cmd", name), ("rc", 0)] + ([("found", "TRUE")] if rk.version == 2 else []))
            elif val is None:
                reply(rk, [("cmd", name), ("rc", -1 if rk.version == 1 else 0)] +
                      ([("found", "FALSE")] if rk.version == 2 else [("msg", "key_not_found")]))
            else:
                reply(rk, [("cmd", name), ("rc", 0)] + ([("found", "TRUE")] if rk.version == 2 else []) +
                      [("value", val)])
        elif cmd_ == "finalize":
            reply(rk, [("cmd", "finalize_ack" if rk.version == 1 else "finalize-response"), ("rc", 0)])
        elif cmd_ == "abort":
            aborted = True
            print("fake_pmi: rank %d asked to abort: %s" % (rk.rank, msg.get("msg", "")), file=sys.stderr)
        else:
            reply(rk, [("cmd", cmd_ + "_response"), ("rc", -1), ("msg", "unknown_command")])

    def pump(rk):
        try:
            data = rk.sock.recv(65536)
        except OSError:
            data = b""
        if not data:
            return False
        rk.buf += data
        while True:
            if not rk.inited or rk.version == 1:
                if b"\n" not in rk.buf:
                    break
                line, rk.buf = rk.buf.split(b"\n", 1)
                was = rk.inited
                rk.inited = True
                handle(rk, v1_parse(line.decode(errors="replace")))
                if not was and rk.version == 2:
                    continue
            else:
                if len(rk.buf) < 6:
                    break
                ln = int(rk.buf[:6])
                if len(rk.buf) < 6 + ln:
                    break
                body, rk.buf = rk.buf[6:6 + ln], rk.buf[6 + ln:]
                handle(rk, v2_parse(body))
        return True

    live = {rk.sock.fileno(): rk for rk in ranks}
    deadline = None
    while True:
        for rk in ranks:
            rc = rk.proc.poll()
            if rc is not None and rc != 0 and status is None:
                status = rc if rc > 0 else 128 - rc
        if status is not None or aborted:
            if status is None:
                status = 1
            if deadline is None:
                deadline = time.time() + 2
                for rk in ranks:
                    if rk.proc.poll() is None:
                        rk.proc.send_signal(signal.SIGTERM)
            elif time.time() > deadline:
                for rk in ranks:
                    if rk.proc.poll() is None:
                        rk.proc.kill()
        if all(rk.proc.poll() is not None for rk in ranks):
            break
        fds = [fd for fd, rk in live.items() if rk.sock.fileno() >= 0]
        r, _, _ = select.select(fds, [], [], 0.05)
        for fd in r:
            if not pump(live[fd]):
                live.pop(fd)
    sys.exit(status or 0)


if __name__ == "__main__":
    main()
