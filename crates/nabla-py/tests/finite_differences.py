"""The tests' one numerical derivative: central differences of a scalar NumPy function."""

import numpy as np


def central_differences(f, x, h=1e-6):
    """The gradient of the scalar ``f`` (a NumPy array in, a float out) at ``x``, by central
    differences with step ``h``."""
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[i] = h
        grad[i] = (f(x + step) - f(x - step)) / (2 * h)
    return grad
