"""The Python examples of the README and of the book's Python chapter run."""

import os
import re

ROOT = os.path.join(os.path.dirname(__file__), "..", "..", "..")


def python_blocks(relative_path):
    with open(os.path.join(ROOT, relative_path)) as fh:
        blocks = re.findall(r"```python\n(.*?)```", fh.read(), re.S)
    assert blocks, f"no Python example in {relative_path}"
    return blocks


def test_readme_python_blocks_run(capsys):
    for block in python_blocks("README.md"):
        exec(compile(block, "README.md", "exec"), {})
    assert "(5, 5, 3)" in capsys.readouterr().out


def test_book_python_blocks_run(capsys):
    for block in python_blocks(os.path.join("docs", "src", "python.md")):
        exec(compile(block, "docs/src/python.md", "exec"), {})
    assert "(10, 10)" in capsys.readouterr().out


def test_mixed_precision_chapter_python_blocks_run():
    for block in python_blocks(os.path.join("docs", "src", "mixed-precision.md")):
        namespace = {}
        exec(compile(block, "docs/src/mixed-precision.md", "exec"), namespace)
        assert namespace["w"].grad.shape == (128, 32)
