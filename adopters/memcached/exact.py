#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Exactness check: memcached's statistics against a load of known counts.

usage: exact.py MEMCACHED-BINARY [CONNECTIONS] [THREADS]

Starts the daemon (-t THREADS, default 4; port chosen free; its environment
is ours, so PCPU_FORCE_FALLBACK=1 reaches it), drives CONNECTIONS (default 8)
client connections at once, each on keys of its own, with sets, gets (hits
and misses, single and multi-key), gets+cas (hits, bad values, misses),
touches, deletes and incr/decr (hits and misses) on values of several slab
classes, every reply checked. Then `stats`, `stats slabs` and `stats items`
must show exactly what the client did, class by class, bytes read and
written included; deleting every key must bring curr_items and bytes to 0;
`stats reset` must zero the resettable counters and counting must restart
from 0. Exit 0 only if every check passes.
"""
import collections
import os
import socket
import subprocess
import sys
import threading
import time

SIZES = (16, 300, 3000, 30000)  # values of four slab classes
KEYS = 240                      # per connection
ROUNDS = 40                     # incr/decr pairs per connection

lock = threading.Lock()
wire = collections.Counter()    # bytes the client sent and received, all connections


class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(('127.0.0.1', port))
        self.buf = b''

    def send(self, data):
        self.s.sendall(data)
        with lock:
            wire['sent'] += len(data)

    def line(self):
        while b'\r\n' not in self.buf:
            chunk = self.s.recv(65536)
            if not chunk:
                raise EOFError('connection closed')
            with lock:
                wire['recv'] += len(chunk)
            self.buf += chunk
        line, self.buf = self.buf.split(b'\r\n', 1)
        return line.decode()

    def data(self, n):
        while len(self.buf) < n + 2:
            chunk = self.s.recv(65536)
            if not chunk:
                raise EOFError('connection closed')
            with lock:
                wire['recv'] += len(chunk)
            self.buf += chunk
        d, self.buf = self.buf[:n], self.buf[n + 2:]
        return d

    def cmd(self, text, value=None):
        self.send(text.encode() + b'\r\n' + (value + b'\r\n' if value is not None else b''))
        return self.line()

    def get(self, *keys, cas=False):
        self.send(('gets ' if cas else 'get ').encode() + ' '.join(keys).encode() + b'\r\n')
        found = {}
        while True:
            line = self.line()
            if line == 'END':
                return found
            parts = line.split()
            assert parts[0] == 'VALUE', line
            found[parts[1]] = (self.data(int(parts[3])), int(parts[4]) if cas else None)

    def stats(self, what=''):
        self.send(('stats ' + what).strip().encode() + b'\r\n')
        out = {}
        while True:
            line = self.line()
            if line == 'END':
                return out
            _, name, value = line.split(' ', 2)
            out[name] = value

    def close(self):
        self.s.close()


def expect(reply, want, what):
    if reply != want:
        raise AssertionError(f'{what}: got {reply!r}, want {want!r}')


class Tally:
    """What the client did: global counts and per slab class counts."""

    def __init__(self):
        self.g = collections.Counter()
        self.cls = collections.defaultdict(collections.Counter)
        self.live = collections.Counter()  # keys alive per class

    def add(self, other):
        self.g.update(other.g)
        for c, t in other.cls.items():
            self.cls[c].update(t)
        self.live.update(other.live)


def store(conn, t, cmd, key, value, klass, want, cas_unique=None):
    """A storage command: counted as a set in the class of the new item whatever its outcome."""
    line = f'{cmd} {key} 0 0 {len(value)}' + (f' {cas_unique}' if cas_unique is not None else '')
    expect(conn.cmd(line, value), want, line)
    t.cls[klass]['cmd_set'] += 1
    if want == 'STORED':
        t.g['total_items'] += 1


def load(port, cid, classes, t, errors):
    try:
        conn = Conn(port)
        keys = {}
        for j in range(KEYS):
            size = SIZES[j % len(SIZES)]
            key = f'c{cid:02d}k{j:05d}'
            value = (key * (size // len(key) + 1)).encode()[:size]
            store(conn, t, 'set', key, value, classes[size], 'STORED')
            keys[key] = (value, classes[size])
            t.live[classes[size]] += 1
        for j, (key, (value, klass)) in enumerate(keys.items()):
            got = conn.get(key)
            expect(got.get(key, (None,))[0], value, f'get {key}')
            t.g['cmd_get'] += 1
            t.cls[klass]['get_hits'] += 1
            if j % 3 == 0:
                expect(conn.get(f'x{cid:02d}m{j:05d}'), {}, 'get miss')
                t.g['cmd_get'] += 1
                t.g['get_misses'] += 1
            if j % 11 == 0:  # one multi-get: two hits and a miss
                other = list(keys)[(j + 1) % len(keys)]
                got = conn.get(key, other, f'x{cid:02d}q{j:05d}')
                expect(sorted(got), sorted([key, other]), 'multi-get')
                t.g['cmd_get'] += 3
                t.g['get_misses'] += 1
                t.cls[klass]['get_hits'] += 1
                t.cls[keys[other][1]]['get_hits'] += 1
            if j % 5 == 0:
                expect(conn.cmd(f'touch {key} 0'), 'TOUCHED', 'touch')
                expect(conn.cmd(f'touch x{cid:02d}t{j:05d} 0'), 'NOT_FOUND', 'touch miss')
                t.g['cmd_touch'] += 2
                t.g['touch_misses'] += 1
                t.cls[klass]['touch_hits'] += 1
            if j % 7 == 0:
                got = conn.get(key, cas=True)
                t.g['cmd_get'] += 1
                t.cls[klass]['get_hits'] += 1
                unique = got[key][1]
                store(conn, t, 'cas', key, value, klass, 'STORED', unique)
                t.cls[klass]['cas_hits'] += 1
                store(conn, t, 'cas', key, value, klass, 'EXISTS', unique)
                t.cls[klass]['cas_badval'] += 1
                store(conn, t, 'cas', f'x{cid:02d}c{j:05d}', value, klass, 'NOT_FOUND', unique)
                t.g['cas_misses'] += 1
            if j % 3 == 1:
                expect(conn.cmd(f'delete {key}'), 'DELETED', 'delete')
                expect(conn.cmd(f'delete {key}'), 'NOT_FOUND', 'delete miss')
                t.cls[klass]['delete_hits'] += 1
                t.g['delete_misses'] += 1
                t.live[klass] -= 1
        # incr/decr between 10 and 11: the value keeps its length, so it changes in place
        key, klass = f'c{cid:02d}n00000', classes[2]
        store(conn, t, 'set', key, b'10', klass, 'STORED')
        t.live[klass] += 1
        for _ in range(ROUNDS):
            expect(conn.cmd(f'incr {key} 1'), '11', 'incr')
            expect(conn.cmd(f'decr {key} 1'), '10', 'decr')
            t.cls[klass]['incr_hits'] += 1
            t.cls[klass]['decr_hits'] += 1
        expect(conn.cmd(f'incr x{cid:02d}n 1'), 'NOT_FOUND', 'incr miss')
        expect(conn.cmd(f'decr x{cid:02d}n 1'), 'NOT_FOUND', 'decr miss')
        t.g['incr_misses'] += 1
        t.g['decr_misses'] += 1
        conn.close()
    except Exception as e:  # reported by the main thread
        errors.append(f'connection {cid}: {e!r}')


def free_port():
    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    port = s.getsockname()[1]
    s.close()
    return port


failures = []


def check(what, got, want):
    ok = got == want
    if not ok:
        failures.append(what)
    print(f"{'ok' if ok else 'FAIL'}  {what}: {got}" + ('' if ok else f' (want {want})'))


def main():
    binary = sys.argv[1]
    nconns = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    threads = int(sys.argv[3]) if len(sys.argv) > 3 else 4
    port = free_port()
    args = [binary, '-p', str(port), '-U', '0', '-l', '127.0.0.1', '-t', str(threads), '-m', '256']
    if os.geteuid() == 0:
        args += ['-u', 'root']
    daemon = subprocess.Popen(args)
    try:
        for _ in range(100):
            try:
                mon = Conn(port)
                break
            except OSError:
                time.sleep(0.05)
        else:
            raise SystemExit('exact: the daemon did not listen')
        total = Tally()
        # which slab class each value size lands in: one probe key of the load's key length
        classes = {}
        for size in SIZES + (2,):
            key = f'p{size:08d}'
            store(mon, total, 'set', key, b'v' * size, None, 'STORED')
            items = mon.stats('items')
            [klass] = {k.split(':')[1] for k, v in items.items()
                       if k.endswith(':number') and v == '1'}
            classes[size] = klass
            total.cls[klass]['cmd_set'] += total.cls.pop(None)['cmd_set']
            expect(mon.cmd(f'delete {key}'), 'DELETED', 'probe delete')
            total.cls[klass]['delete_hits'] += 1
        base = mon.stats()
        tallies = [Tally() for _ in range(nconns)]
        errors = []
        workers = [threading.Thread(target=load, args=(port, i, classes, tallies[i], errors))
                   for i in range(nconns)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        for e in errors:
            check(e, 'error', 'no error')
        for t in tallies:
            total.add(t)
        print(f'# memcached -t {threads}, {nconns} connections, classes by value size {classes}')
        g = total.g
        sets = sum(c['cmd_set'] for c in total.cls.values())
        hits = sum(c['get_hits'] for c in total.cls.values())

        def want_stats(stats, after_reset=False):
            for name in ('cmd_get', 'get_misses', 'cmd_touch', 'touch_misses', 'delete_misses',
                         'incr_misses', 'decr_misses', 'cas_misses'):
                check(f'stats {name}', int(stats[name]), g[name])
            for name in ('delete_hits', 'incr_hits', 'decr_hits', 'cas_hits', 'cas_badval',
                         'touch_hits'):
                check(f'stats {name}', int(stats[name]),
                      sum(c[name] for c in total.cls.values()))
            check('stats cmd_set', int(stats['cmd_set']), sets)
            check('stats get_hits', int(stats['get_hits']), hits)
            check('stats total_items', int(stats['total_items']), g['total_items'])
            check('stats curr_items', int(stats['curr_items']), sum(total.live.values()))
            if not after_reset:
                check('stats total_connections (load)',
                      int(stats['total_connections']) - int(base['total_connections']), nconns)
            check('stats curr_connections (load closed)', int(stats['curr_connections']),
                  int(base['curr_connections']))

        for _ in range(200):  # the daemon closes the load's connections when it reads EOF
            if mon.stats()['curr_connections'] == base['curr_connections']:
                break
            time.sleep(0.01)
        with lock:
            sent, recv = wire['sent'], wire['recv']
        stats = mon.stats()
        check('stats bytes_read (every byte the client sent)', int(stats['bytes_read']),
              sent + len(b'stats\r\n'))
        check('stats bytes_written (every byte it received)', int(stats['bytes_written']), recv)
        want_stats(stats)
        slabs = mon.stats('slabs')
        items = mon.stats('items')
        for klass in sorted(total.cls, key=int):
            c = total.cls[klass]
            for name in ('get_hits', 'cmd_set', 'delete_hits', 'incr_hits', 'decr_hits',
                         'cas_hits', 'cas_badval', 'touch_hits'):
                check(f'stats slabs {klass}:{name}', int(slabs.get(f'{klass}:{name}', 0)), c[name])
            check(f'stats items items:{klass}:number', int(items.get(f'items:{klass}:number', 0)),
                  total.live[klass])
            lru = sum(int(items.get(f'items:{klass}:hits_to_{l}', 0))
                      for l in ('hot', 'warm', 'cold', 'temp'))
            check(f'stats items items:{klass}:hits_to_* (sum)', lru, c['get_hits'])
        # every key deleted: the gauges come back to exactly 0
        for cid in range(nconns):
            for j in range(KEYS):
                key = f'c{cid:02d}k{j:05d}'
                if j % 3 != 1:
                    expect(mon.cmd(f'delete {key}'), 'DELETED', f'final delete {key}')
            expect(mon.cmd(f'delete c{cid:02d}n00000'), 'DELETED', 'final delete')
        stats = mon.stats()
        check('stats curr_items after deleting every key', int(stats['curr_items']), 0)
        check('stats bytes after deleting every key', int(stats['bytes']), 0)
        # stats reset: resettable counters to 0, then counting again from there
        expect(mon.cmd('stats reset'), 'RESET', 'stats reset')
        stats = mon.stats()
        for name in ('cmd_get', 'cmd_set', 'get_hits', 'get_misses', 'delete_hits', 'cas_hits',
                     'touch_hits', 'incr_hits', 'total_items', 'total_connections'):
            check(f'after stats reset: {name}', int(stats[name]), 0)
        slabs = mon.stats('slabs')
        check('after stats reset: every stats slabs counter',
              sum(int(v) for k, v in slabs.items()
                  if k.split(':')[-1] in ('get_hits', 'cmd_set', 'delete_hits', 'incr_hits',
                                          'decr_hits', 'cas_hits', 'cas_badval', 'touch_hits')),
              0)
        total = Tally()
        for j in range(20):
            store(mon, total, 'set', f'r{j:08d}', b'after reset', classes[16], 'STORED')
            total.live[classes[16]] += 1
            expect(len(mon.get(f'r{j:08d}')), 1, 'get after reset')
            total.g['cmd_get'] += 1
            total.cls[classes[16]]['get_hits'] += 1
        g = total.g
        sets = sum(c['cmd_set'] for c in total.cls.values())
        hits = sum(c['get_hits'] for c in total.cls.values())
        want_stats(mon.stats(), after_reset=True)
        mon.close()
    finally:
        daemon.terminate()
        daemon.wait()
    path = 'fallback (PCPU_FORCE_FALLBACK=1)' if os.environ.get('PCPU_FORCE_FALLBACK') else 'default'
    print(f'# exact: {len(failures)} of the checks failed, update path: {path}')
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
