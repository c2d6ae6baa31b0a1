"""The committed type stub is what scripts/gen_py_stubs.py writes from the built module, so every
function, method and dtype is in it."""

import importlib.util
import os

import nabla_rs as nb

ROOT = os.path.join(os.path.dirname(__file__), "..", "..", "..")


def test_stub_is_up_to_date():
    spec = importlib.util.spec_from_file_location("gen_py_stubs", os.path.join(ROOT, "scripts", "gen_py_stubs.py"))
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    with open(os.path.join(os.path.dirname(nb.__file__), "_nabla.pyi")) as fh:
        committed = fh.read()
    assert committed == gen.render(), "run scripts/gen_py_stubs.py and commit _nabla.pyi"


def test_stub_names_every_public_function():
    with open(os.path.join(os.path.dirname(nb.__file__), "_nabla.pyi")) as fh:
        stub = fh.read()
    for name in ["exp", "tensor", "from_dlpack", "einsum", "linalg", "fft", "nn", "float32"]:
        assert f"def {name}(" in stub or f"{name}: " in stub, name
