#!/usr/bin/env python3
"""Independent reference values for iolab's YCSB generators (src/kv/keys.rs,
src/kv/generator.rs). Written from YCSB's published algorithms (Utils.fnvhash64,
CoreWorkload.buildKeyName, ZipfianGenerator after Gray et al. SIGMOD 1994,
ScrambledZipfianGenerator), not from iolab's Rust code. The uniform source is
SplitMix64 with u = (x >> 11) * 2^-53, the same test source the Rust unit tests
plug in. Run: python3 bench/kv_generators_reference.py
"""
import math

M64 = (1 << 64) - 1


def to_signed(x):
    x &= M64
    return x - (1 << 64) if x >> 63 else x


def fnvhash64(val):
    h = 0xCBF29CE484222325
    v = to_signed(val)
    for _ in range(8):
        octet = v & 0xFF
        v >>= 8  # Python >> on negative ints is arithmetic, like Java
        h ^= octet
        h = (h * 1099511628211) & M64
    s = to_signed(h)
    return to_signed(abs(s))  # Math.abs wraps for Long.MIN_VALUE


def key_name(keynum, zeropadding, hashed):
    n = fnvhash64(keynum) if hashed else keynum
    s = str(n)
    return "user" + "0" * max(0, zeropadding - len(s)) + s


def java_rem(a, b):
    r = abs(a) % abs(b)
    return -r if a < 0 else r


class SplitMix64:
    def __init__(self, seed):
        self.s = seed & M64

    def next_u64(self):
        self.s = (self.s + 0x9E3779B97F4A7C15) & M64
        z = self.s
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        return z ^ (z >> 31)

    def unit(self):
        return (self.next_u64() >> 11) * (2.0 ** -53)


def zeta(n, theta):
    s = 0.0
    for i in range(n):
        s += 1 / math.pow(i + 1, theta)
    return s


class Zipfian:
    def __init__(self, lo, hi, theta, zetan=None):
        self.items = hi - lo + 1
        self.base = lo
        self.theta = theta
        self.zeta2 = zeta(2, theta)
        self.alpha = 1.0 / (1.0 - theta)
        self.zetan = zeta(self.items, theta) if zetan is None else zetan
        self.eta = (1 - math.pow(2.0 / self.items, 1 - theta)) / (1 - self.zeta2 / self.zetan)

    def next(self, u):
        uz = u * self.zetan
        if uz < 1.0:
            return self.base
        if uz < 1.0 + math.pow(0.5, self.theta):
            return self.base + 1
        return self.base + int(self.items * math.pow(self.eta * u - self.eta + 1, self.alpha))


ITEM_COUNT = 10_000_000_000
ZETAN = 26.46902820178302


class ScrambledZipfian:
    def __init__(self, lo, hi):
        self.lo = lo
        self.count = hi - lo + 1
        self.gen = Zipfian(0, ITEM_COUNT, 0.99, ZETAN)

    def next(self, u):
        return self.lo + java_rem(fnvhash64(self.gen.next(u)), self.count)


if __name__ == "__main__":
    for v in [0, 1, 2, 12345, -1]:
        print(f"fnvhash64({v}) = {fnvhash64(v)}")
    print(key_name(0, 1, True), key_name(5, 1, False), key_name(5, 8, False), key_name(1, 25, True))
    print(f"zeta(2, 0.99) = {zeta(2, 0.99)!r}")
    print(f"zeta(1000, 0.99) = {zeta(1000, 0.99)!r}")
    print(f"zeta(10000, 0.5) = {zeta(10000, 0.5)!r}")
    z = Zipfian(0, 999, 0.99)
    r = SplitMix64(42)
    print("zipfian(1000, 0.99), splitmix64 seed 42:", [z.next(r.unit()) for _ in range(10)])
    z = Zipfian(0, 999, 0.5)
    r = SplitMix64(7)
    print("zipfian(1000, 0.5), splitmix64 seed 7:", [z.next(r.unit()) for _ in range(10)])
    s = ScrambledZipfian(0, 999)
    r = SplitMix64(42)
    print("scrambled(0..999), splitmix64 seed 42:", [s.next(r.unit()) for _ in range(10)])
    r = SplitMix64(42)
    print("splitmix64 seed 42 first u64:", r.next_u64())
