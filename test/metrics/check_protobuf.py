#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Splits a delimited protobuf body (each message preceded by its length as
a varint), decodes each message with protoc --decode against metrics.proto,
and compares the text with EXPECTED (families separated by "--").
usage: check_protobuf.py BODY METRICS.PROTO EXPECTED"""
import difflib
import os
import re
import subprocess
import sys
import time

# A created_timestamp is the registration's time, different at each run:
# checked to be within the last hour, then compared as this placeholder.
CREATED = re.compile(r"( *)created_timestamp \{\n *seconds: (\d+)\n(?: *nanos: (\d+)\n)? *\}\n")


def created_placeholder(text):
    def repl(m):
        t = int(m.group(2)) + int(m.group(3) or 0) / 1e9
        now = time.time()
        if not now - 3600 <= t <= now + 1:
            sys.exit(f"created_timestamp {t} is not a time of this run ({now})")
        if m.group(3) is not None and not 0 < int(m.group(3)) < 1000000000:
            sys.exit(f"created_timestamp nanos {m.group(3)} out of range")
        return f"{m.group(1)}created_timestamp {{ <this run> }}\n"
    return CREATED.sub(repl, text)


def split(body):
    pos, out = 0, []
    while pos < len(body):
        n = shift = 0
        while True:
            if pos >= len(body):
                sys.exit("a length past the end of the body")
            b = body[pos]
            pos += 1
            n |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                break
        if pos + n > len(body):
            sys.exit("a message past the end of the body")
        out.append(body[pos:pos + n])
        pos += n
    return out


def main():
    body_path, proto, expected_path = sys.argv[1:4]
    with open(body_path, "rb") as f:
        body = f.read()
    texts = []
    for msg in split(body):
        r = subprocess.run(
            ["protoc", "--decode=io.prometheus.client.MetricFamily",
             "-I", os.path.dirname(os.path.abspath(proto)), os.path.basename(proto)],
            input=msg, capture_output=True, check=False)
        if r.returncode != 0:
            sys.exit("protoc could not decode a message: " + r.stderr.decode())
        texts.append(created_placeholder(r.stdout.decode()))
    got = "--\n".join(texts)
    with open(expected_path, encoding="utf-8") as f:
        want = f.read()
    if got != want:
        sys.stdout.writelines(difflib.unified_diff(
            want.splitlines(True), got.splitlines(True), "expected", "protoc"))
        return 1
    print(f"{len(texts)} families decoded by protoc as expected")
    return 0


if __name__ == "__main__":
    sys.exit(main())
