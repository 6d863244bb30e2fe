"""pywalk demo workload: a small CPU-bound program with a known shape.

About 2/3 of the time goes to parse_records -> checksum and 1/3 to render -> layout,
so the profile should show that split.
"""
import sys
import time


def checksum(text):
    total = 0
    for ch in text: total = (total * 31 + ord(ch)) & 0xFFFFFFFF
    return total


def parse_records(n):
    return [checksum("record-%d" % i) for i in range(n)]


def layout(width):
    acc = 0
    for x in range(width): acc += (x * x) % 7
    return acc


def render(n):
    return [layout(200) for _ in range(n)]


def main(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        parse_records(2000)
        render(70)


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 5.0)
