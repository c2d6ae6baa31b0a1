#!/usr/bin/env python3
"""Generate the mpmath fixture checked by crates/nabla-special/tests/special.rs.

Run from anywhere (needs mpmath only; written against mpmath 1.3):

    python3 scripts/gen_special_betaln_fixture.py

It writes crates/nabla-special/tests/fixtures/betaln.json: for every pair a <= b of a grid of positive
float64 arguments from 1e-300 to 1e300 (both sides of nabla's switch to Stirling's series at 10, and
the large arguments where lgamma(a) + lgamma(b) - lgamma(a + b) cancels), betaln(a, b) = ln B(a, b)
and its partial derivatives psi(a) - psi(a + b) and psi(b) - psi(a + b), computed by mpmath with 450
significant digits (lgamma(1e300) has 303 digits before the point, and the difference needs 17 after
it), rounded once to float64. Each point is [a, b, value, d/da, d/db].
"""

from __future__ import annotations

import json
import os

import mpmath as mp

mp.mp.dps = 450

OUT = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "crates", "nabla-special", "tests", "fixtures", "betaln.json"
)

GRID = [1e-300, 1e-10, 1e-3, 0.1, 0.5, 1.0, 2.5, 7.3, 9.99, 10.0, 10.5, 25.0, 100.0, 1e3, 1e5, 1e8, 1e10,
        1e15, 1e20, 1e50, 1e150, 1e300]


def point(a, b):
    x, y = mp.mpf(a), mp.mpf(b)
    value = mp.loggamma(x) + mp.loggamma(y) - mp.loggamma(x + y)
    both = mp.digamma(x + y)
    return [a, b, float(value), float(mp.digamma(x) - both), float(mp.digamma(y) - both)]


def main():
    points = [point(a, b) for i, a in enumerate(GRID) for b in GRID[i:]]
    with open(OUT, "w") as fh:
        json.dump({"generator": "scripts/gen_special_betaln_fixture.py", "mpmath": mp.__version__,
                   "dps": mp.mp.dps, "points": points}, fh, separators=(",", ":"))
        fh.write("\n")
    print(f"wrote {len(points)} points to {OUT}")


if __name__ == "__main__":
    main()
