import os

# SciPy reads this once, when it is first imported (JAX imports it too): set before any test module
# is collected, so that scikit-learn's Array API dispatch (test_array_api.py) finds it on.
os.environ.setdefault("SCIPY_ARRAY_API", "1")

import numpy as np
import pytest

import nabla_rs as nb


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def assert_close(actual, expected, rtol=1e-6, atol=1e-6):
    np.testing.assert_allclose(np.asarray(actual), np.asarray(expected), rtol=rtol, atol=atol)


@pytest.fixture
def close():
    return assert_close


@pytest.fixture(autouse=True)
def _seed():
    nb.manual_seed(0)
