#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Drives one redis-server over RESP with a known load and prints what it
measured as key=value lines (no Redis client library needed).

  probe.py PORT exact    a known load (SET, LPUSH, DEL, FLUSHALL ASYNC);
                         prints used_memory after each step, and checks that
                         the approximate read is within its error bound
                         (patched servers, which report used_memory_approx)
  probe.py PORT evict MAXMEMORY
                         SETs 1 KB values one at a time under MAXMEMORY
                         (allkeys-lru) and prints the used_memory just before
                         and just after the first eviction, and the key count
  probe.py compare exact|evict UNPATCHED PATCHED
                         compares two outputs above: the same load must
                         change used_memory by as much on both, within SLACK
                         (the unpatched server alone varies by up to 1 KiB
                         from run to run: clientsCron resizes the client's
                         query buffer on its own clock, the lazyfree thread
                         frees on its own); eviction must start on both at
                         the first command over maxmemory
"""
import socket
import sys
import time


class Redis:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.f = self.s.makefile("rb")

    def call(self, *args):
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        self.s.sendall(b"".join(out))
        return self.reply()

    def reply(self):
        line = self.f.readline()
        kind, rest = line[:1], line[1:-2]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            raise RuntimeError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            data = self.f.read(n + 2)[:-2]
            return data.decode()
        if kind == b"*":
            return [self.reply() for _ in range(int(rest))]
        raise RuntimeError("bad reply %r" % line)

    def info(self, section):
        fields = {}
        for line in self.call("INFO", section).splitlines():
            if ":" in line and not line.startswith("#"):
                k, v = line.split(":", 1)
                fields[k] = v
        return fields


def check_bound(r, step, problems):
    m = r.info("memory")
    used = int(m["used_memory"])
    line = "%s used_memory=%d" % (step, used)
    if "used_memory_approx" in m:
        approx, bound = int(m["used_memory_approx"]), int(m["used_memory_error_bound"])
        line += " approx=%d bound=%d" % (approx, bound)
        if abs(approx - used) > bound:
            problems.append("%s: |approx %d - used %d| > bound %d" % (step, approx, used, bound))
    print(line)


def exact(r):
    problems = []
    value = "x" * 1000
    r.call("FLUSHALL")
    check_bound(r, "empty", problems)
    for i in range(20000):
        r.call("SET", "key:%d" % i, value)
    check_bound(r, "set20000", problems)
    for i in range(20000):
        r.call("LPUSH", "list:%d" % (i % 100), value)
    check_bound(r, "lpush20000", problems)
    for i in range(0, 20000, 2):
        r.call("DEL", "key:%d" % i)
    check_bound(r, "del10000", problems)
    # the lazyfree thread frees these: wait until it is done
    r.call("FLUSHALL", "ASYNC")
    for _ in range(500):
        if int(r.info("memory")["lazyfree_pending_objects"]) == 0:
            break
        time.sleep(0.01)
    check_bound(r, "flushall_async", problems)
    for p in problems:
        print("PROBLEM", p)
    return 1 if problems else 0


def evict(r, maxmemory):
    value = "x" * 1024
    r.call("FLUSHALL")
    r.call("CONFIG", "SET", "maxmemory-policy", "allkeys-lru")
    r.call("CONFIG", "SET", "maxmemory", maxmemory)
    r.call("CONFIG", "RESETSTAT")
    before = int(r.info("memory")["used_memory"])
    for i in range(10 * maxmemory // 1024):
        r.call("SET", "key:%d" % i, value)
        m = r.info("all")
        if int(m["evicted_keys"]) > 0:
            print("first_eviction_key=%d used_before=%d used_after=%d maxmemory=%d bound=%s"
                  % (i, before, int(m["used_memory"]), maxmemory,
                     m.get("used_memory_error_bound", "-")))
            return 0
        before = int(m["used_memory"])
    print("PROBLEM no eviction")
    return 1


SLACK = 4096
KEY = 2048  # one SET of a 1 KB value, with its key and dict entry, is less


def fields(path):
    out = {}
    for line in open(path):
        words = line.split()
        if not words or "=" in words[0]:
            for w in words:
                k, v = w.split("=")
                out[k] = int(v) if v.lstrip("-").isdigit() else v
        else:
            out[words[0]] = {k: int(v) for k, v in (w.split("=") for w in words[1:] if "=" in w)
                             if v.lstrip("-").isdigit()}
    return out


def compare(what, unpatched, patched):
    u, p, problems = fields(unpatched), fields(patched), []
    if what == "exact":
        steps = ["empty", "set20000", "lpush20000", "del10000", "flushall_async"]
        for prev, step in zip(steps, steps[1:]):
            du = u[step]["used_memory"] - u[prev]["used_memory"]
            dp = p[step]["used_memory"] - p[prev]["used_memory"]
            verdict = "ok" if abs(du - dp) <= SLACK else "DIFFERS"
            print("%-15s used_memory change: unpatched %+d, patched %+d, %+d (%s)"
                  % (step, du, dp, dp - du, verdict))
            if verdict != "ok":
                problems.append(step)
    else:
        for name, r in (("unpatched", u), ("patched", p)):
            over = r["used_before"] - r["maxmemory"]
            verdict = "ok" if 0 < over <= KEY else "NOT AT THE LIMIT"
            print("%-9s first eviction at key %d, used_memory %d = maxmemory %+d (%s)"
                  % (name, r["first_eviction_key"], r["used_before"], over, verdict))
            if verdict != "ok":
                problems.append(name)
    return 1 if problems else 0


def main():
    if sys.argv[1] == "compare":
        return compare(sys.argv[2], sys.argv[3], sys.argv[4])
    r = Redis(int(sys.argv[1]))
    if sys.argv[2] == "exact":
        return exact(r)
    return evict(r, int(sys.argv[3]))


if __name__ == "__main__":
    sys.exit(main())
