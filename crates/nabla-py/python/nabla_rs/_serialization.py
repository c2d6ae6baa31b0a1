"""``nabla_rs.save`` and ``nabla_rs.load``, as ``torch.save`` and ``torch.load``: any picklable
structure of tensors, parameters, state dicts, containers, numbers and strings, in one pickle file.

A file holds ``{"nabla_save_version": 1, "obj": obj}``. Saving to a path is atomic: a temporary
file in the same folder is written, flushed to disk and renamed over the target, so an error leaves
an existing file as it was. Loading is restricted by default (``weights_only=True``, as PyTorch
>= 2.6): only tensors, parameters and plain containers are rebuilt, never arbitrary classes or
functions, so a file from elsewhere cannot run code when loaded.
"""

from __future__ import annotations

import functools
import os
import pickle
import secrets
from typing import Any, Optional

from . import _nabla

__all__ = ["save", "load"]

FORMAT_KEY = "nabla_save_version"
FORMAT_VERSION = 1

# What a pickled tensor, parameter or state dict refers to, by pickle protocol 2 to 5 and NumPy 1 or
# 2 (a tensor's values are a NumPy array): nothing else is imported under ``weights_only=True``.
_ALLOWED_GLOBALS = frozenset(
    [
        ("collections", "OrderedDict"),
        ("builtins", "complex"),
        ("builtins", "set"),
        ("builtins", "frozenset"),
        ("builtins", "bytearray"),
        ("builtins", "slice"),
        ("_codecs", "encode"),
        ("numpy", "dtype"),
        ("numpy", "ndarray"),
        ("numpy.core.multiarray", "_reconstruct"),
        ("numpy._core.multiarray", "_reconstruct"),
        ("numpy.core.multiarray", "scalar"),
        ("numpy._core.multiarray", "scalar"),
        ("numpy.core.numeric", "_frombuffer"),
        ("numpy._core.numeric", "_frombuffer"),
    ]
)
_REBUILD = ("nabla_rs._torch_surface", "_rebuild")
_TENSOR_CLASSES = {("nabla_rs", "Tensor"), ("nabla_rs._nabla", "Tensor"), ("nabla_rs.nn", "Parameter")}


class UnpicklingRefused(pickle.UnpicklingError):
    """``load``'s refusal of a file it read: a global ``weights_only`` does not load, a crafted
    tensor, not a nabla save, another format version. Its message names the file and the reason."""


def _checked_rebuild(name: str, cls, values, dtype_name, requires_grad, grad=None):
    """The tensor rebuild of ``weights_only`` loading: ``_rebuild`` after checking that the class is
    a tensor class and the dtype a dtype's name (a crafted file could name anything)."""
    from . import nn
    from ._torch_surface import _rebuild

    if cls not in (_nabla.Tensor, nn.Parameter):
        raise UnpicklingRefused(f"load: {name} holds a tensor of class {cls!r}, not Tensor or Parameter")
    if not isinstance(dtype_name, str) or not isinstance(getattr(_nabla, dtype_name, None), _nabla.dtype):
        raise UnpicklingRefused(f"load: {name} holds a tensor of unknown dtype {dtype_name!r}")
    return _rebuild(cls, values, dtype_name, bool(requires_grad), grad)


class _WeightsUnpickler(pickle.Unpickler):
    """An unpickler that rebuilds tensors, parameters, containers and numbers only: any other
    global (class or function) in the file is refused before it is imported."""

    def __init__(self, file, name: str):
        super().__init__(file)
        self._name = name

    def find_class(self, module: str, name: str):
        module = "builtins" if module == "__builtin__" else module  # protocol 2's name
        if (module, name) == _REBUILD:
            return functools.partial(_checked_rebuild, self._name)
        if (module, name) in _TENSOR_CLASSES or (module, name) in _ALLOWED_GLOBALS:
            return super().find_class(module, name)
        raise UnpicklingRefused(
            f"load: {self._name} refers to {module}.{name}, which weights_only=True does not load (it "
            "loads tensors, parameters, state dicts, containers, numbers and strings only). If you "
            "trust the file's source, load it with weights_only=False (that runs whatever code the "
            "file names)."
        )


def _as_path(f) -> str | None:
    """``f`` as a path string when it is one (``str`` or ``os.PathLike``), else ``None``."""
    if isinstance(f, (str, os.PathLike)):
        path = os.fspath(f)
        return path if isinstance(path, str) else os.fsdecode(path)
    return None


def _check_target(path: str) -> str:
    """The folder that will hold ``path``, after refusing a link, a folder, a read-only file or a
    missing folder."""
    if os.path.islink(path):
        raise ValueError(f"save: {path!r} is a symbolic link; nabla does not write through links (pass the target's path)")
    if os.path.isdir(path):
        raise IsADirectoryError(f"save: {path!r} is a directory, not a file")
    if os.path.exists(path) and not os.access(path, os.W_OK):
        raise PermissionError(f"save: {path!r} is read-only; nabla does not replace a file it may not write")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"save: the folder {folder!r} of {path!r} does not exist")
    return folder


def _create_temporary(folder: str, path: str):
    """A new file next to ``path`` (created exclusively, with the permissions a new file gets from
    the umask), as ``(name, binary file object)``."""
    for _ in range(100):
        name = os.path.join(folder, f".{os.path.basename(path)}.{secrets.token_hex(6)}.tmp")
        try:
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
        except FileExistsError:
            continue
        return name, os.fdopen(fd, "wb")
    raise FileExistsError(f"save: could not create a temporary file next to {path!r}")


def _sync_folder(folder: str) -> None:
    """Flushes the folder's entry of the renamed file to disk, where the system allows it."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _add_note(error: BaseException, note: str) -> None:
    """Adds ``note`` to the error's report (Python 3.11+; before that the error is left as it is)."""
    if hasattr(error, "add_note"):
        error.add_note(note)


def _save_to_path(payload: dict, path: str, protocol: int) -> None:
    """Writes ``payload`` to ``path`` atomically: a temporary file in the same folder, flushed and
    synced, then renamed over ``path``; on any error the temporary file is removed."""
    folder = _check_target(path)
    temporary, out = _create_temporary(folder, path)
    try:
        with out:
            if os.path.exists(path):
                os.chmod(temporary, os.stat(path).st_mode & 0o7777)
            pickle.dump(payload, out, protocol=protocol)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException as error:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        _add_note(error, f"save: nothing was written to {path!r} (an existing file there is unchanged)")
        raise
    _sync_folder(folder)


def save(obj: Any, f, pickle_protocol: int = pickle.HIGHEST_PROTOCOL) -> None:
    """Saves ``obj`` (tensors, ``nn.Parameter``\\ s, a ``state_dict()``, lists, tuples, dicts,
    numbers, strings, ``None``; any picklable object for ``load(..., weights_only=False)``) to ``f``,
    as ``torch.save``.

    ``f`` is a path (``str`` or ``os.PathLike``) or a binary file object open for writing. A path is
    written atomically (a temporary file in the same folder, synced to disk, then renamed over it),
    so an error leaves an existing file untouched; a symbolic link or a directory is refused. For a
    file object the whole pickle is built in memory first, so a pickling error writes nothing.
    ``pickle_protocol`` is the pickle protocol (2 to 5; the highest by default).
    """
    payload = {FORMAT_KEY: FORMAT_VERSION, "obj": obj}
    path = _as_path(f)
    if path is not None:
        _save_to_path(payload, path, pickle_protocol)
    elif callable(getattr(f, "write", None)):
        f.write(pickle.dumps(payload, protocol=pickle_protocol))
    else:
        raise TypeError(f"save: f must be a path or a binary file object with write(), got {type(f).__name__}")


def _unpickle(file, name: str, weights_only: bool):
    """The object pickled in ``file``: refusals of ``weights_only`` as they are, any other failure
    (a truncated or corrupt file, not a pickle) as an ``UnpicklingError`` naming the file."""
    unpickler = _WeightsUnpickler(file, name) if weights_only else pickle.Unpickler(file)
    try:
        return unpickler.load()
    except UnpicklingRefused:
        raise
    except Exception as error:
        raise pickle.UnpicklingError(
            f"load: cannot read {name} ({type(error).__name__}: {error}): the file is truncated, corrupt "
            "or not a nabla save file"
        ) from error


def _unwrap(payload, name: str):
    """The saved object of a nabla file's payload, after checking the format marker and version."""
    if not isinstance(payload, dict) or FORMAT_KEY not in payload or "obj" not in payload:
        raise UnpicklingRefused(f"load: {name} is a pickle but not a file written by nabla_rs.save")
    version = payload[FORMAT_KEY]
    if version != FORMAT_VERSION:
        raise UnpicklingRefused(
            f"load: {name} has format version {version!r}; this nabla reads version {FORMAT_VERSION} "
            "(it was written by a different nabla)"
        )
    return payload["obj"]


def load(f, weights_only: Optional[bool] = True, map_location=None) -> Any:
    """The object :func:`save` wrote to ``f`` (a path or a binary file object open for reading),
    as ``torch.load``.

    ``weights_only=True`` (the default, as PyTorch >= 2.6) rebuilds tensors, parameters, state dicts,
    containers, numbers and strings only, and refuses a file that names any other class or function
    (``pickle.UnpicklingError`` naming it). ``weights_only=False`` unpickles anything, a pickled
    model included: use it for files you trust only, since unpickling can run any code.
    ``map_location`` is accepted for PyTorch's calls; nabla's tensors load on the CPU (``None`` or
    ``"cpu"``). A missing file raises ``FileNotFoundError``; a truncated, corrupt or foreign file
    raises ``pickle.UnpicklingError``; both name the file.
    """
    weights_only = True if weights_only is None else bool(weights_only)  # PyTorch's None: the default
    if map_location not in (None, "cpu"):
        raise ValueError(f"load: map_location={map_location!r}; nabla's tensors load on the CPU (None or 'cpu')")
    path = _as_path(f)
    if path is None:
        if not callable(getattr(f, "read", None)):
            raise TypeError(f"load: f must be a path or a binary file object with read(), got {type(f).__name__}")
        name = repr(getattr(f, "name", None) or f)
        return _unwrap(_unpickle(f, name, weights_only), name)
    if os.path.isdir(path):
        raise IsADirectoryError(f"load: {path!r} is a directory, not a file")
    try:
        file = open(path, "rb")
    except FileNotFoundError:
        raise FileNotFoundError(f"load: no file {path!r}") from None
    with file:
        return _unwrap(_unpickle(file, repr(path), weights_only), repr(path))
