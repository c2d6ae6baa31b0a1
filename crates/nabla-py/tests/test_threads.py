"""Kernels release the GIL: Python threads run while nabla computes, and results stay right."""

import sys
import threading

import numpy as np
import pytest

import nabla_rs as nb


def test_other_threads_run_during_a_long_kernel():
    a = nb.randn(1500, 1500)
    done = threading.Event()
    ready = threading.Barrier(2)

    def work():
        ready.wait()
        for _ in range(4):
            (a @ a).sum()
        done.set()

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        t = threading.Thread(target=work)
        t.start()
        ready.wait()
        count = 0
        while not done.is_set():
            count += 1
        t.join()
    finally:
        sys.setswitchinterval(old)
    # With the GIL held through the matmuls this loop would barely run; released, it spins freely.
    assert count > 10_000


def test_concurrent_ops_give_the_sequential_results():
    xs = [nb.tensor(np.random.default_rng(i).normal(size=(64, 64))) for i in range(4)]
    expected = [float((x @ x).tanh().sum()) for x in xs]
    results = [None] * 4

    def run(i):
        for _ in range(20):
            results[i] = float((xs[i] @ xs[i]).tanh().sum())

    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == expected


def test_the_main_thread_joined_the_kernel_thread_pool():
    """`import nabla_rs` on the main thread set up the CPU pool with that thread in it, so a second
    set-up is refused (the pool exists)."""
    with pytest.raises(ValueError, match="thread pool"):
        nb._nabla._init_thread_pool()
