#!/usr/bin/env python3
"""Throws malformed arguments and files at the `nabla` binary and classifies what happens.

Each run is one of: a clean error (exit 1 or 2 with one line on standard error), success, a panic
(exit 101 or "panicked" on standard error), an abort (killed by a signal), or a hang (still running
after the timeout). The peak resident memory of every run is measured (`/usr/bin/time`), and the
worst one is reported. Only the standard library is used.

Usage: python3 scripts/hardening_campaign.py [--nabla target/release/nabla] [--timeout 60] [--kills 20]
Build the binary first: cargo build --release -p nabla-cli --features mpi (without `mpi`, or without
mpirun, the cases of ranks that disagree or are killed are not run, and the output says so).
"""

import argparse
import gzip
import json
import os
import random
import struct
import subprocess
import tempfile
from collections import Counter


def npy(shape, descr="<f4", values=None, header_pad=0):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape)
    header += " " * header_pad
    while (10 + len(header) + 1) % 64:
        header += " "
    header += "\n"
    body = values if values is not None else b""
    if len(header) < 65536:
        return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + body
    return b"\x93NUMPY\x02\x00" + struct.pack("<I", len(header)) + header.encode() + body


def idx(dims, body):
    return bytes([0, 0, 0x08, len(dims)]) + b"".join(struct.pack(">I", d) for d in dims) + body


def run(cmd, timeout, env=None):
    """Runs `cmd` under /usr/bin/time; returns (outcome, peak KiB, stderr's first line)."""
    timed = ["/usr/bin/time", "-f", "MAXRSS %M"] + cmd
    try:
        p = subprocess.run(timed, capture_output=True, timeout=timeout, text=True, errors="replace", env=env)
    except subprocess.TimeoutExpired:
        return "hang", 0, ""
    lines = p.stderr.strip().splitlines()
    rss = 0
    if lines and lines[-1].startswith("MAXRSS"):
        rss = int(lines[-1].split()[1])
        lines = lines[:-1]
    lines = [l for l in lines if not l.startswith("Command ")]
    err = "\n".join(lines)
    if "panicked" in err or p.returncode == 101:
        return "panic", rss, err
    if p.returncode < 0 or p.returncode > 128:
        return "abort", rss, err
    if p.returncode == 0:
        return "ok", rss, err
    if len(lines) == 1:
        return "clean error", rss, err
    return "multi-line error", rss, err


def mutations(data, rng, count):
    """Truncations, bit flips, insertions and deletions of `data`."""
    out = [data[:n] for n in sorted(set([0, 1, 7, 8, 9, 16, 64, len(data) // 2, len(data) - 1]))]
    for _ in range(count):
        b = bytearray(data)
        kind = rng.randrange(3)
        pos = rng.randrange(max(1, min(len(b), 4096)))
        if kind == 0 and b:
            b[pos % len(b)] ^= 1 << rng.randrange(8)
        elif kind == 1:
            b[pos:pos] = bytes([rng.randrange(256)])
        elif b:
            del b[pos % len(b)]
        out.append(bytes(b))
    return out


def digest(path):
    """The bytes of `path` (None if it does not exist), without following a final symlink."""
    try:
        if os.path.islink(path):
            return ("link", os.readlink(path))
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


def unchanged(*paths):
    """A check that fails ("data loss" or "link followed") if any of `paths` changed in the run."""
    before = {p: digest(p) for p in paths}

    def check(outcome, err):
        for p, old in before.items():
            if digest(p) != old:
                return "link followed" if os.path.basename(p).startswith("victim") else "data loss"
        return None
    return check


def prediction_rows(expected, cmd, timeout):
    """A case whose check reruns `cmd` and counts its CSV rows: fewer or more than `expected`
    predictions, or a probability that is not a number, is a silent wrong result."""
    def check(outcome, err):
        if outcome != "ok":
            return None
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout).stdout
        rows = [l for l in out.splitlines()[1:] if l]
        bad = any(not (0.0 <= float(r.split(",")[2]) <= 1.0) for r in rows)
        return "silent wrong" if len(rows) != expected or bad else None
    return check


def property_cases(nabla, tmp, ck, file, pix):
    """Cases with a property beyond "no crash": no data loss, no link followed, no silent wrong
    result (issue 48's classes: diverged runs, symlinks, foreign files, NaN checkpoints, CSV
    headers and BOMs, .npy dtypes, bad settings)."""
    cases = []
    train = [nabla, "train", "--model", "mlp", "--epochs", "1", "--no-plot", "-q"]
    good = open(ck, "rb").read()
    # A diverged run on top of a good checkpoint, with periodic saves.
    kept = file("kept.safetensors", good)
    cases.append(("loss diverged", train + ["--checkpoint", kept, "--checkpoint-every", "1",
                  "--optimizer", "sgd", "--lr", "1e30"], unchanged(kept)))
    # Links and foreign files at every path a run writes.
    victim = file("victim.txt", b"precious\n")
    for flag in ["--checkpoint", "--log", "--plot"]:
        link = os.path.join(tmp, f"link{flag}.out" + (".csv" if flag == "--log" else ""))
        os.symlink(victim, link)
        extra = [] if flag == "--checkpoint" else ["--checkpoint", os.path.join(tmp, f"c{flag}.st")]
        cmd = [c for c in train if c != "--no-plot"] if flag == "--plot" else train
        cases.append(("link " + flag, cmd + extra + [flag, link], unchanged(victim, link)))
        foreign = file(f"foreign{flag}" + (".csv" if flag == "--log" else ".out"), b"not nabla's\n")
        cases.append(("foreign " + flag, cmd + extra + [flag, foreign], unchanged(foreign)))
    # Checkpoints holding NaN weights.
    n = struct.unpack("<Q", good[:8])[0]
    body = bytearray(good)
    body[8 + n:8 + n + 4] = struct.pack("<f", float("nan"))
    nan_ck = file("nan.safetensors", bytes(body))
    cases.append(("nan-checkpoint eval", [nabla, "eval", "--checkpoint", nan_ck]))
    one = file("one.npy", npy("(1, 64)", values=pix))
    cases.append(("nan-checkpoint predict", [nabla, "predict", "--checkpoint", nan_ck, "--input", one],
                  prediction_rows(1, [nabla, "predict", "--checkpoint", nan_ck, "--input", one], 60)))
    # CSV: five examples whose first row has a BOM or one malformed token.
    row = ",".join(["0.5"] * 64)
    for i, first in enumerate(["\ufeff" + row, row.replace("0.5", "abc", 1), row.replace("0.5", "0x1", 1),
                               row.replace("0.5", "0.5.5", 1), row.replace("0.5", "\u0661", 1),
                               row.replace("0.5", "\x00", 1), ",".join(f"p{j}" for j in range(64))]):
        text = "\n".join([first] + [row] * 4) + "\n"
        path = file(f"rows{i}.csv", text.encode())
        cmd = [nabla, "predict", "--checkpoint", ck, "--input", path]
        expected = 4 if first.startswith("p0") else 5
        cases.append(("csv first-row", cmd, prediction_rows(expected, cmd, 60)))
    # .npy of every numeric dtype the docs promise.
    for descr, fmt in [("<f2", "e"), ("<u2", "H"), ("<u4", "I"), ("<u8", "Q"), ("|u1", "B"), ("<i8", "q")]:
        ones = struct.pack("<" + fmt * 128, *([1] * 128))
        path = file(f"dtype{descr[1:]}.npy", npy("(2, 64)", descr=descr, values=ones))
        cmd = [nabla, "predict", "--checkpoint", ck, "--input", path]
        cases.append(("npy dtype", cmd, prediction_rows(2, cmd, 60)))
    # A large input: memory must be bounded by the batch, not the file.
    big = file("big.npy", npy("(100000, 64)", values=struct.pack("<f", 0.5) * (100000 * 64)))
    cases.append(("predict large", [nabla, "predict", "--checkpoint", ck, "--input", big]))
    # Settings from the environment.
    for value in ["abc", "-1", "0", " 1", "9" * 23]:
        cases.append(("setting NABLA_MAX_ALLOC_BYTES", [nabla, "eval", "--checkpoint", ck], None,
                      {"NABLA_MAX_ALLOC_BYTES": value}))
    return cases


def killed_save_cases(nabla, tmp, trials):
    """Runs killed with SIGKILL at random moments while saving a checkpoint every step; then a command
    that reads the checkpoint. A temporary file left after that command, or a checkpoint that no longer
    loads, is data loss (issue 48, defect 5)."""
    rng = random.Random(48)
    cases = []
    for i in range(trials):
        d = os.path.join(tmp, f"killed{i}")
        os.mkdir(d)
        ck = os.path.join(d, "k.safetensors")
        train = [nabla, "train", "--model", "mlp", "--epochs", "1000", "--checkpoint", ck,
                 "--checkpoint-every", "1", "--no-plot", "-q"]
        delay = rng.uniform(0.3, 3.0)
        script = ('"$@" & P=$!; sleep %.2f; kill -9 $P; wait $P 2>/dev/null; "%s" eval --checkpoint "%s" '
                  '>/dev/null 2>&1; exit 0' % (delay, nabla, ck))

        def check(outcome, err, d=d, ck=ck):
            if outcome != "ok":
                return None
            left = [n for n in os.listdir(d) if ".tmp-" in n]
            if left:
                return "data loss"
            if os.path.exists(ck):
                p = subprocess.run([nabla, "eval", "--checkpoint", ck], capture_output=True)
                return None if p.returncode == 0 else "data loss"
            return None
        cases.append(("killed save", ["sh", "-c", script, "sh"] + train, check))
    return cases


def mpirun(np):
    """mpirun for `np` ranks on this machine (as root and on fewer cores than ranks if need be)."""
    return ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(np)]


def has_mpi(nabla, tmp):
    """Whether mpirun exists and `nabla` was built with the `mpi` feature."""
    try:
        p = subprocess.run(mpirun(2) + [nabla, "train", "--model", "mlp", "--max-steps", "1", "--no-plot",
                           "-q", "--checkpoint", os.path.join(tmp, "probe.safetensors")],
                           capture_output=True, text=True, timeout=120)
    except (FileNotFoundError, subprocess.TimeoutExpired):
        return False
    return p.returncode == 0


CRASH_WORDS = ["malloc", "double free", "corruption", "Segmentation", "panicked", "signal 6", "core dumped"]


def mpi_cases(nabla, tmp):
    """Jobs of two ranks started with different options, and a rank killed mid-step: each must end
    within the timeout with nabla's one-line error, and never with a memory error (issue 48, defect 1)."""
    ck = os.path.join(tmp, "mpi.safetensors")
    def side(extra):
        """A rank's arguments: `extra`, and --model mlp and --epochs 1 unless `extra` sets them."""
        defaults = [a for flag, value in (("--model", "mlp"), ("--epochs", "1")) if flag not in extra
                    for a in (flag, value)]
        return ["train", "--no-plot", "-q", "--checkpoint", ck] + defaults + extra
    pairs = [(["--batch-size", "64"], ["--batch-size", "32"]), (["--batch-size", "16"], ["--batch-size", "128"]),
             ([], ["--model", "cnn"]), (["--epochs", "1"], ["--epochs", "2"]),
             (["--epochs", "3"], ["--epochs", "1"]), (["--max-steps", "3"], ["--max-steps", "5"]),
             ([], ["--max-steps", "2"]), ([], ["--early-stopping", "1"]),
             (["--early-stopping", "2"], ["--early-stopping", "3"]), (["--lr", "0.1"], ["--lr", "0.2"]),
             (["--optimizer", "sgd"], ["--optimizer", "adam"]), (["--seed", "1"], ["--seed", "2"])]

    def disagreement(outcome, err):
        if outcome == "hang":
            return "hang"
        if any(w in err for w in CRASH_WORDS):
            return "abort"
        if "the ranks disagree on" in err and outcome != "ok":
            return "clean error"
        return "silent wrong"
    cases = []
    for first, second in pairs:
        cmd = mpirun(1) + [nabla] + side(first) + [":", "-np", "1", nabla] + side(second)
        cases.append(("mpi disagree", cmd, disagreement))
    # One rank killed mid-step: the job ends, no rank is left running.
    killed = os.path.join(tmp, "mpikill.safetensors")
    job = mpirun(2) + [nabla, "train", "--model", "cnn", "--epochs", "1000", "--no-plot", "-q",
                       "--checkpoint", killed]
    # A rank's command line starts with the binary (mpirun's and this shell's do not).
    rank = "^%s train .*%s" % (nabla, killed)
    script = ('"$@" & M=$!; sleep 6; kill -9 $(pgrep -n -f "%s"); wait $M; R=$?; sleep 1; '
              'if pgrep -f "%s" >/dev/null; then echo "a rank is still running" >&2; exit 3; fi; '
              '[ $R -ne 0 ] && echo "the job ended with status $R" >&2; exit 1' % (rank, rank))

    def ended(outcome, err):
        if outcome == "hang" or "still running" in err:
            subprocess.run(["pkill", "-9", "-f", rank])
            return "hang"
        return "clean error" if "the job ended" in err else "silent wrong"
    for _ in range(3):
        cases.append(("mpi killed rank", ["sh", "-c", script, "sh"] + job, ended))
    return cases


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nabla", default="target/release/nabla")
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--mutations", type=int, default=60)
    ap.add_argument("--kills", type=int, default=20, help="runs killed while saving")
    args = ap.parse_args()
    nabla = os.path.abspath(args.nabla)
    rng = random.Random(0)
    tmp = tempfile.mkdtemp(prefix="nabla-campaign-")
    os.chdir(tmp)
    cases = []  # (label, command)

    def file(name, data):
        path = os.path.join(tmp, name)
        with open(path, "wb") as f:
            f.write(data)
        return path

    ck = os.path.join(tmp, "good.safetensors")
    subprocess.run([nabla, "train", "--model", "mlp", "--epochs", "1", "--checkpoint", ck,
                    "--no-plot", "-q"], check=True, capture_output=True)

    # Arguments.
    for a in [["train", "--lr", "-0.1"], ["train", "--lr", "1e308", "--epochs", "1", "-q",
              "--no-plot", "--checkpoint", os.path.join(tmp, "div.safetensors")],
              ["train", "--epochs", str(2**63)], ["train", "--epochs", str(2**64)],
              ["train", "--threads", "1000"], ["train", "--threads", "100000"],
              ["train", "--workers", "100000"], ["train", "--batch-size", str(2**64 - 1)],
              ["train", "--plot", "/nonexistent/p.svg"], ["train", "--checkpoint", tmp],
              ["train", "--checkpoint", "/dev/null"], ["eval", "--checkpoint", tmp],
              ["eval", "--checkpoint", "/dev/null"], ["train", "--log", "/proc/x.csv"],
              ["train", "--resume", "--checkpoint", ck, "--epochs", "3", "--lr", "1"],
              ["predict", "--checkpoint", ck, "--input", tmp],
              ["predict", "--checkpoint", ck, "--input", "/dev/zero"],
              ["train", "--dataset", "mnist", "--data-dir", "/dev/null"],
              ["train", "--early-stopping", str(2**64)], ["train", "--checkpoint-every", "0"]]:
        cases.append(("args " + " ".join(a[:3]), [nabla] + a))

    # Checkpoints.
    good = open(ck, "rb").read()
    n = struct.unpack("<Q", good[:8])[0]
    header = good[8:8 + n].decode()
    edits = [('\\"classes\\":10', '\\"classes\\":100000000'),
             ('\\"classes\\":10', '\\"classes\\":18446744073709551615'),
             ('\\"classes\\":10', '\\"classes\\":10000000'),
             ('\\"input_shape\\":[1,8,8]', '\\"input_shape\\":[1,100000,100000]'),
             ('"dtype":"F32"', '"dtype":"F64"'), ('"dtype":"F32"', '"dtype":"C64"')]
    for i, (a, b) in enumerate(edits):
        h = header.replace(a, b, 1).encode()
        cases.append(("checkpoint edit", [nabla, "eval", "--checkpoint",
                      file(f"edit{i}.safetensors", struct.pack("<Q", len(h)) + h + good[8 + n:])]))
    cases.append(("checkpoint huge header", [nabla, "eval", "--checkpoint",
                  file("huge.safetensors", struct.pack("<Q", 2**62) + good[8:])]))
    for i, m in enumerate(mutations(good, rng, args.mutations)):
        cases.append(("checkpoint mutation", [nabla, "eval", "--checkpoint",
                      file(f"mut{i}.safetensors", m)]))

    # predict inputs.
    pix = struct.pack("<64f", *([0.5] * 64))
    for i, data in enumerate([npy("(1, 64)", values=pix), npy("(1, 64)", values=pix[:10]),
                              npy("(1000000000, 64)", values=pix), npy(f"({2**63}, 64)"),
                              npy("(1, 64)", descr="<c16", values=pix), npy("(1, 64)", header_pad=100_000, values=pix),
                              gzip.compress(npy("(16000000, 64)") + bytes(64 * 4 * 16_000_000 // 64)),
                              npy("(1, 64)", values=struct.pack("<64f", *([float("nan")] * 64))),
                              npy("(1, 64)", values=struct.pack("<64f", *([16.0] * 64)))]):
        cases.append(("predict npy", [nabla, "predict", "--checkpoint", ck, "--input",
                      file(f"in{i}.npy", data)]))
    for i, data in enumerate([b"", b"a,b\n", b"1," * 100000 + b"\n", (("0.5," * 63) + "x\n").encode()]):
        cases.append(("predict csv", [nabla, "predict", "--checkpoint", ck, "--input",
                      file(f"in{i}.csv", data)]))

    # IDX directories.
    labels = bytes(i % 10 for i in range(20))
    images = idx([20, 4, 4], bytes(320))
    variants = {
        "huge-dims": (idx([2**31, 2**31, 2**31], b""), idx([20], labels)),
        "truncated": (images[:100], idx([20], labels)),
        "bomb": (gzip.compress(idx([20, 4, 4], bytes(320)) + bytes(200_000_000)), idx([20], labels)),
        "bomb-declared": (gzip.compress(idx([2**20, 64, 64], bytes(16_000_000))), idx([20], labels)),
        "label255": (images, idx([20], bytes([255]) + labels[1:])),
        "mismatch": (images, idx([19], labels[:19])),
    }
    for name, (img, lab) in variants.items():
        d = os.path.join(tmp, name)
        os.mkdir(d)
        for prefix in ["train", "t10k"]:
            gz = name.startswith("bomb")
            open(os.path.join(d, f"{prefix}-images-idx3-ubyte" + (".gz" if gz else "")), "wb").write(img)
            open(os.path.join(d, f"{prefix}-labels-idx1-ubyte"), "wb").write(lab)
        cases.append((f"idx {name}", [nabla, "train", "--dataset", "mnist", "--data-dir", d,
                      "--epochs", "1", "--no-plot", "-q", "--checkpoint", os.path.join(d, "c.safetensors")]))

    cases += property_cases(nabla, tmp, ck, file, pix)
    cases += killed_save_cases(nabla, tmp, args.kills)
    if has_mpi(nabla, tmp):
        cases += mpi_cases(nabla, tmp)
    else:
        print("mpirun or the binary's `mpi` feature is missing: the MPI cases are not run "
              "(build with: cargo build --release -p nabla-cli --features mpi)")

    outcomes = Counter()
    by_label = Counter()
    worst = (0, "")
    for case in cases:
        label, cmd = case[0], case[1]
        env = dict(os.environ, **case[3]) if len(case) > 3 else None
        outcome, rss, err = run(cmd, args.timeout, env)
        if len(case) > 2 and case[2] is not None:
            verdict = case[2](outcome, err)
            outcome = verdict or outcome
        if label == "predict large" and rss > 512 * 1024:
            outcome = "memory blow-up"
        outcomes[outcome] += 1
        by_label[(label.split(" ")[0], outcome)] += 1
        if rss > worst[0]:
            worst = (rss, label)
        if outcome not in ("clean error", "ok"):
            print(f"{outcome}: {label}: {err[:300]!r}")
    for (kind, outcome), count in sorted(by_label.items()):
        print(f"{kind:12} {outcome:16} {count}")
    print(json.dumps({"inputs": len(cases), "outcomes": outcomes,
                      "worst_peak_rss_mib": round(worst[0] / 1024, 1), "worst_case": worst[1]}))


if __name__ == "__main__":
    main()
