"""``nabla_rs.nn``: modules with PyTorch's names, defaults and initialisation, over nabla's kernels.

A ``Module`` registers the ``Parameter``\\ s and sub-modules assigned to it, as ``torch.nn.Module``:
``parameters()``, ``named_parameters()``, ``state_dict()``, ``load_state_dict()``, ``train()`` and
``eval()`` behave the same, and ``state_dict()`` saves to safetensors files that PyTorch reads.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Dict, Iterator, Tuple

from .. import _arguments, _nabla
from .._inplace import RemovableHandle  # noqa: F401 (nn.RemovableHandle, as torch.utils.hooks)
from . import functional as F  # noqa: F401
from . import functional, init, utils  # noqa: F401

Tensor = _nabla.Tensor


class Parameter(Tensor):
    """A tensor that is a module's parameter: a leaf that requires gradients (by default)."""

    def __new__(cls, data, requires_grad: bool = True):
        return super().__new__(cls, data, None, requires_grad)

    def __init__(self, data, requires_grad: bool = True):
        pass

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()


class Module:
    """The base class of layers and models, as ``torch.nn.Module``."""

    def __init__(self):
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_forward_pre_hooks", OrderedDict())
        object.__setattr__(self, "_forward_hooks", OrderedDict())
        object.__setattr__(self, "_backward_hooks", OrderedDict())
        object.__setattr__(self, "_backward_pre_hooks", OrderedDict())

    def __setattr__(self, name, value):
        if "_parameters" not in self.__dict__:
            raise AttributeError("call Module.__init__() before assigning attributes")
        for store in ("_parameters", "_buffers", "_modules"):
            self.__dict__[store].pop(name, None)
        if isinstance(value, Parameter):
            self._parameters[name] = value
        elif isinstance(value, Module):
            self._modules[name] = value
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name):
        for store in ("_parameters", "_buffers", "_modules"):
            d = self.__dict__.get(store)
            if d is not None and name in d:
                return d[name]
        raise AttributeError(f"{type(self).__name__!r} has no attribute {name!r}")

    def register_buffer(self, name: str, tensor) -> None:
        """A tensor saved in the state dict but not trained (running statistics, ...)."""
        self._buffers[name] = tensor

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} has no forward()")

    def __call__(self, *args, **kwargs):
        for hook in list(self.__dict__.get("_forward_pre_hooks", {}).values()):
            changed = hook(self, args)
            if changed is not None:
                args = changed if isinstance(changed, tuple) else (changed,)
        if self.__dict__.get("_backward_hooks") or self.__dict__.get("_backward_pre_hooks"):
            from . import _backward_hooks

            output = _backward_hooks.call(self, args, kwargs, self.forward)
        else:
            output = self.forward(*args, **kwargs)
        for hook in list(self.__dict__.get("_forward_hooks", {}).values()):
            changed = hook(self, args, output)
            if changed is not None:
                output = changed
        return output

    def register_forward_pre_hook(self, hook) -> "RemovableHandle":
        """``hook(module, args)`` runs before each call; a value it returns replaces the positional
        arguments (a tuple, or one argument). Returns a handle whose ``remove()`` takes it off."""
        return RemovableHandle(self._forward_pre_hooks, hook)

    def register_forward_hook(self, hook) -> "RemovableHandle":
        """``hook(module, args, output)`` runs after each call; a value it returns replaces the
        output. Returns a handle whose ``remove()`` takes it off."""
        return RemovableHandle(self._forward_hooks, hook)

    def register_full_backward_hook(self, hook) -> "RemovableHandle":
        """``hook(module, grad_input, grad_output)`` runs when the gradients of the call's
        positional tensor inputs are complete (``None`` for inputs that need none); a tuple it
        returns replaces ``grad_input``. Returns a handle whose ``remove()`` takes it off."""
        return RemovableHandle(self._backward_hooks, hook)

    def register_full_backward_pre_hook(self, hook) -> "RemovableHandle":
        """``hook(module, grad_output)`` runs when the gradients of the call's outputs are
        complete; a tuple it returns replaces ``grad_output``."""
        return RemovableHandle(self._backward_pre_hooks, hook)

    def named_modules(self, prefix: str = "") -> Iterator[Tuple[str, "Module"]]:
        yield prefix, self
        for name, m in self._modules.items():
            yield from m.named_modules(f"{prefix}.{name}" if prefix else name)

    def modules(self) -> Iterator["Module"]:
        return (m for _, m in self.named_modules())

    def children(self) -> Iterator["Module"]:
        return iter(self._modules.values())

    def named_parameters(self, prefix: str = "") -> Iterator[Tuple[str, Parameter]]:
        seen = set()
        for mod_name, m in self.named_modules(prefix):
            for name, p in m._parameters.items():
                if p is not None and id(p) not in seen:
                    seen.add(id(p))
                    yield (f"{mod_name}.{name}" if mod_name else name), p

    def parameters(self) -> Iterator[Parameter]:
        return (p for _, p in self.named_parameters())

    def train(self, mode: bool = True) -> "Module":
        for m in self.modules():
            object.__setattr__(m, "training", mode)
        return self

    def eval(self) -> "Module":
        return self.train(False)

    def zero_grad(self) -> None:
        for p in self.parameters():
            p.grad = None

    def to(self, *args, **kwargs) -> "Module":
        """Converts the floating-point parameters and buffers to a dtype, in place (the parameter
        objects stay, so optimizers keep them), as ``torch.nn.Module.to``: ``to(dtype)``,
        ``to(tensor)`` (its dtype), ``to("cpu")``, ``to(device=..., dtype=...)``."""
        dtype, device = kwargs.pop("dtype", None), kwargs.pop("device", None)
        kwargs.pop("non_blocking", None)
        if kwargs:
            raise TypeError(f"to() got unexpected keyword arguments {', '.join(kwargs)}")
        for arg in args:
            if isinstance(arg, str):
                device = arg
            elif isinstance(arg, Tensor):
                dtype = arg.dtype
            else:
                dtype = arg
        if device not in (None, "cpu"):
            raise ValueError(f"to: nabla's modules run on the CPU (device={device!r})")
        if dtype is None:
            return self
        dtype = _nabla.dtype(dtype)
        if not (dtype.is_floating_point or dtype.is_complex):
            raise TypeError(f"nn.Module.to only accepts floating-point or complex dtypes, got {dtype}")
        for m in self.modules():
            m._convert(dtype)
        return self

    def _convert(self, dtype) -> None:
        """This module's own floating-point parameters and buffers converted to ``dtype``."""
        for store in (self._parameters, self._buffers):
            for t in store.values():
                if t is not None and t.dtype.is_floating_point and t.dtype != dtype:
                    t._convert_in_place(dtype)

    def float(self) -> "Module":
        """``to(float32)``."""
        return self.to(_nabla.float32)

    def double(self) -> "Module":
        """``to(float64)``."""
        return self.to(_nabla.float64)

    def half(self) -> "Module":
        """``to(float16)``: the layers compute in float32 and round each result to float16."""
        return self.to(_nabla.float16)

    def bfloat16(self) -> "Module":
        """``to(bfloat16)``: the layers compute in float32 and round each result to bfloat16."""
        return self.to(_nabla.bfloat16)

    def cpu(self) -> "Module":
        """The module itself (nabla's modules are on the CPU)."""
        return self

    def state_dict(self) -> Dict[str, Tensor]:
        """Parameters and buffers by dotted name, detached (PyTorch's names: ``0.weight``, ...)."""
        out = OrderedDict()
        for mod_name, m in self.named_modules():
            for store in (m._parameters, m._buffers):
                for name, t in store.items():
                    if t is not None:
                        out[f"{mod_name}.{name}" if mod_name else name] = t.detach()
        return out

    def load_state_dict(self, state: Dict[str, Tensor], strict: bool = True):
        """Copies values into the parameters and buffers of the same names (shapes must match)."""
        own = {}
        for mod_name, m in self.named_modules():
            for store_name in ("_parameters", "_buffers"):
                for name in getattr(m, store_name):
                    own[f"{mod_name}.{name}" if mod_name else name] = (m, store_name, name)
        missing = [k for k in own if k not in state]
        unexpected = [k for k in state if k not in own]
        if strict and (missing or unexpected):
            raise KeyError(f"state dict mismatch: missing {missing}, unexpected {unexpected}")
        for key, (m, store_name, name) in own.items():
            if key not in state:
                continue
            target = getattr(m, store_name)[name]
            value = state[key]
            if tuple(target.shape) != tuple(_nabla.tensor(value).shape):
                raise ValueError(f"{key}: shape {tuple(_nabla.tensor(value).shape)} does not match {tuple(target.shape)}")
            if store_name == "_parameters":
                target.data = value
            else:
                getattr(m, store_name)[name] = _nabla.tensor(value, dtype=target.dtype)
        return missing, unexpected

    def extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        lines = [f"({name}): " + repr(m).replace("\n", "\n  ") for name, m in self._modules.items()]
        head = f"{type(self).__name__}({self.extra_repr()}"
        return head + ")" if not lines else head + "\n  " + "\n  ".join(lines) + "\n)"


class _RustKernel:
    """The Rust layer (``_nabla.nn.Layer``) behind a :class:`_RustLayer`, with the arguments it was
    built from. It keeps no parameters between calls (each call binds the module's), only its
    configuration and its dropout stream, so:

    * ``copy.deepcopy`` of a module shares it (the copy gets its own parameters and buffers, and
      building a new Rust layer would draw initial weights from the global generator);
    * pickling saves its arguments and unpickling builds it again, leaving the global generator
      (``manual_seed``'s stream) where it was: the initial weights that build draws are replaced by
      the pickled ones anyway.
    """

    def __init__(self, kind: str, values: dict, dtype):
        # A nabla dtype is kept by name (it does not pickle); names, NumPy and Python types as given.
        self.kind, self.values = kind, values
        self.dtype = dtype.name if isinstance(dtype, _nabla.dtype) else dtype
        self.layer = _nabla.nn.Layer(kind, values, self.dtype)

    @classmethod
    def _without_drawing(cls, kind: str, values: dict, dtype) -> "_RustKernel":
        """A kernel built leaving the global generator where it was (for unpickling and dtype
        conversion, whose initial weights are replaced at once)."""
        state = _nabla.get_rng_state()
        try:
            return cls(kind, values, dtype)
        finally:
            _nabla.set_rng_state(state)

    def __deepcopy__(self, memo) -> "_RustKernel":
        return self

    def __reduce__(self):
        return (_RustKernel._without_drawing, (self.kind, self.values, self.dtype))


class _RustLayer(Module):
    """A module computed by nabla's Rust layer of the same name (``nabla::nn``): its
    initialisation, checks and forward pass are the Rust ones. The module owns the parameters and
    buffers; each call binds the Rust layer to them, so gradients, optimizers, ``load_state_dict``
    and weight tying (``a.weight = b.weight``) work as in PyTorch. ``copy.deepcopy`` and pickling
    copy the parameters and buffers (tied ones stay tied); see :class:`_RustKernel` for the Rust
    layer itself."""

    _kind = ""
    _arguments = ()

    def __init__(self, *args, device=None, dtype=None, **kwargs):
        super().__init__()
        if device not in (None, "cpu"):
            raise ValueError(f"{self._kind}: nabla's modules are built on the CPU (device={device!r})")
        values = _arguments.bind(self._kind, self._arguments, args, kwargs)
        kernel = _RustKernel(self._kind, values, dtype or _nabla._default_dtype())
        object.__setattr__(self, "_layer", kernel)
        object.__setattr__(self, "_arg_values", values)
        tensors, buffer_names = [], []
        for name, is_buffer, t in kernel.layer.named_tensors():
            tensors.append(name)
            *path, leaf = name.split(".")
            owner = self._submodule(path)
            if is_buffer:
                owner.register_buffer(leaf, t)
                buffer_names.append(name)
            else:
                setattr(owner, leaf, Parameter(t))
        for name, value in values.items():
            if name not in tensors:
                object.__setattr__(self, name, value)
        for name in ("weight", "bias"):
            if name not in tensors:
                object.__setattr__(self, name, None)
        object.__setattr__(self, "_tensor_names", tensors)
        object.__setattr__(self, "_buffer_names", buffer_names)

    def _submodule(self, path) -> Module:
        """The sub-module at ``path`` (``["self_attn", "out_proj"]``), made on first use, so that the
        Rust layer's nested tensors have PyTorch's dotted names."""
        owner = self
        for part in path:
            child = owner._modules.get(part)
            if child is None:
                child = _Submodule()
                setattr(owner, part, child)
            owner = child
        return owner

    def _convert(self, dtype) -> None:
        super()._convert(dtype)
        # The Rust layer binds tensors of its own dtype: build it again in the new one.
        k = self._layer
        object.__setattr__(self, "_layer", _RustKernel._without_drawing(k.kind, k.values, dtype.name))

    def _tensor(self, name: str):
        *path, leaf = name.split(".")
        return getattr(self._submodule(path), leaf)

    def _call(self, inputs, flags=None):
        """Runs the Rust layer on ``inputs`` (``None`` for optional ones left out) with the current
        parameters and buffers; stores the buffers' new values and returns the outputs."""
        tensors = [self._tensor(name) for name in self._tensor_names]
        outputs, buffers = self._layer.layer.forward(list(inputs), tensors, self.training, flags)
        for name, value in zip(self._buffer_names, buffers):
            *path, leaf = name.split(".")
            self._submodule(path)._buffers[leaf] = value
        return outputs

    def forward(self, input):
        return self._call([input])[0]

    def extra_repr(self) -> str:
        return ", ".join(f"{k}={v!r}" for k, v in self._arg_values.items())


class _Submodule(Module):
    """A part of a Rust layer that holds some of its tensors (``self_attn``, ``linear1``, ...)."""


def _layer_class(kind: str) -> type:
    arguments = tuple(_nabla.nn.layer_arguments(kind))
    doc = f"PyTorch's ``nn.{kind}``, computed by nabla's Rust layer ``nabla::nn::{kind}``."
    cls = type(kind, (_RustLayer,), {"_kind": kind, "_arguments": arguments, "__doc__": doc, "__module__": __name__})
    cls.__signature__ = _arguments.signature(arguments, keyword_only=("device", "dtype"))
    return cls


for _kind in _nabla.nn.LAYERS:
    globals()[_kind] = _layer_class(_kind)
del _kind

# A Hugging Face state dict under the names of ``GPT2``, ``BERT`` or ``ViT`` (prefixes, heads, tied
# weights and index buffers as the Rust models' ``load`` treats them).
hf_state = _nabla.nn.hf_state


# The layers of several inputs or outputs: PyTorch's call signatures over the Rust layers.


class RNN(RNN):  # noqa: F811
    __doc__ = RNN.__doc__

    def forward(self, input, hx=None):
        """``(output, h_n)``."""
        return tuple(self._call([input, hx]))


class GRU(GRU):  # noqa: F811
    __doc__ = GRU.__doc__

    def forward(self, input, hx=None):
        """``(output, h_n)``."""
        return tuple(self._call([input, hx]))


class LSTM(LSTM):  # noqa: F811
    __doc__ = LSTM.__doc__

    def forward(self, input, hx=None):
        """``(output, (h_n, c_n))``; ``hx`` is ``(h_0, c_0)``."""
        h0, c0 = hx if hx is not None else (None, None)
        out, h, c = self._call([input, h0, c0])
        return out, (h, c)


class MultiheadAttention(MultiheadAttention):  # noqa: F811
    __doc__ = MultiheadAttention.__doc__

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
                average_attn_weights=True, is_causal=False):
        """``(attn_output, attn_weights)``, the weights ``None`` unless ``need_weights``."""
        flags = dict(need_weights=need_weights, average_attn_weights=average_attn_weights, is_causal=is_causal)
        out, weights = self._call([query, key, value, key_padding_mask, attn_mask], flags)
        return out, weights


class BERT(BERT):  # noqa: F811
    __doc__ = BERT.__doc__

    def forward(self, input_ids, attention_mask=None, token_type_ids=None):
        """``(last_hidden_state, pooler_output)``, the first two fields of ``BertModel``'s output;
        ``attention_mask`` is 1 for tokens and 0 for padding, ``token_type_ids`` the segments."""
        return tuple(self._call([input_ids, attention_mask, token_type_ids]))


class TransformerEncoderLayer(TransformerEncoderLayer):  # noqa: F811
    __doc__ = TransformerEncoderLayer.__doc__

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        return self._call([src, src_mask, src_key_padding_mask], dict(is_causal=is_causal))[0]


class TransformerDecoderLayer(TransformerDecoderLayer):  # noqa: F811
    __doc__ = TransformerDecoderLayer.__doc__

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False):
        inputs = [tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask]
        return self._call(inputs, dict(tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal))[0]


class Bilinear(Bilinear):  # noqa: F811
    __doc__ = Bilinear.__doc__

    def forward(self, input1, input2):
        return self._call([input1, input2])[0]


class Sequential(Module):
    """Modules applied in order; named ``0``, ``1``, ... as in PyTorch.

    A ``ReLU`` directly followed by a ``MaxPool2d`` runs after the pooling instead, on the smaller
    tensor (as the Rust ``Sequential`` does): ``relu(max(window)) == max(relu(window))`` and the
    gradient reaches the same element, so values and gradients are the written order's bit for bit.
    """

    def __init__(self, *modules: Module):
        super().__init__()
        for i, m in enumerate(modules):
            setattr(self, str(i), m)

    def forward(self, x):
        modules = list(self._modules.values())
        i = 0
        while i < len(modules):
            if type(modules[i]) is ReLU and i + 1 < len(modules) and type(modules[i + 1]) is MaxPool2d:
                x = modules[i](modules[i + 1](x))
                i += 2
            else:
                x = modules[i](x)
                i += 1
        return x

    def __getitem__(self, i):
        return list(self._modules.values())[i]

    def __len__(self):
        return len(self._modules)


class ModuleList(Module):
    """A list of modules, registered as ``0``, ``1``, ... (PyTorch's ``nn.ModuleList``)."""

    def __init__(self, modules=None):
        super().__init__()
        for m in modules or ():
            self.append(m)

    def append(self, module: Module) -> "ModuleList":
        setattr(self, str(len(self._modules)), module)
        return self

    def extend(self, modules) -> "ModuleList":
        for m in modules:
            self.append(m)
        return self

    def __getitem__(self, i):
        items = list(self._modules.values())
        return ModuleList(items[i]) if isinstance(i, slice) else items[i]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())


class ModuleDict(Module):
    """Modules by name (PyTorch's ``nn.ModuleDict``)."""

    def __init__(self, modules=None):
        super().__init__()
        for k, m in dict(modules or {}).items():
            self[k] = m

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        setattr(self, key, module)

    def __contains__(self, key) -> bool:
        return key in self._modules

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def keys(self):
        return self._modules.keys()

    def values(self):
        return self._modules.values()

    def items(self):
        return self._modules.items()


class _Loss(Module):
    """A loss as a module: PyTorch's loss class over the functional (nabla's Rust loss). Tensor
    options (``weight``, ``pos_weight``) are buffers, as in PyTorch."""

    _function = None
    _options: Dict[str, object] = {}

    def __init__(self, *args, **kwargs):
        super().__init__()
        rows = [(k, False, v) for k, v in self._options.items()]
        given = _arguments.bind(type(self).__name__, rows, args, kwargs)
        object.__setattr__(self, "_given", given)
        for k, v in self._given.items():
            if isinstance(v, _nabla.Tensor):
                self.register_buffer(k, v)
            else:
                object.__setattr__(self, k, v)

    def forward(self, *inputs):
        options = {k: (self._buffers[k] if k in self._buffers else v) for k, v in self._given.items()}
        return type(self)._function(*inputs, **options)

    def extra_repr(self) -> str:
        return ", ".join(f"{k}={v!r}" for k, v in self._given.items() if not isinstance(v, _nabla.Tensor))


def _loss_class(name: str, function, doc: str, **options) -> type:
    return type(name, (_Loss,), {"_function": function, "_options": options, "__doc__": doc, "__module__": __name__})


F_ = functional
L1Loss = _loss_class("L1Loss", F_.l1_loss, "Mean absolute error.", reduction="mean")
MSELoss = _loss_class("MSELoss", F_.mse_loss, "Mean squared error.", reduction="mean")
CrossEntropyLoss = _loss_class("CrossEntropyLoss", F_.cross_entropy, "Cross-entropy of logits against class indices or probabilities.",
                               weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0)
NLLLoss = _loss_class("NLLLoss", F_.nll_loss, "Negative log-likelihood of log-probabilities.", weight=None, ignore_index=-100, reduction="mean")
BCELoss = _loss_class("BCELoss", F_.binary_cross_entropy, "Binary cross-entropy of probabilities.", weight=None, reduction="mean")
BCEWithLogitsLoss = _loss_class("BCEWithLogitsLoss", F_.binary_cross_entropy_with_logits, "Binary cross-entropy of logits, computed stably.",
                                weight=None, reduction="mean", pos_weight=None)
KLDivLoss = _loss_class("KLDivLoss", F_.kl_div, "Kullback-Leibler divergence (input: log-probabilities).", reduction="mean", log_target=False)
SmoothL1Loss = _loss_class("SmoothL1Loss", F_.smooth_l1_loss, "Quadratic below ``beta``, linear above.", reduction="mean", beta=1.0)
HuberLoss = _loss_class("HuberLoss", F_.huber_loss, "Quadratic below ``delta``, linear above.", reduction="mean", delta=1.0)
CosineEmbeddingLoss = _loss_class("CosineEmbeddingLoss", F_.cosine_embedding_loss, "Cosine similarity against targets of ±1.",
                                  margin=0.0, reduction="mean")
MarginRankingLoss = _loss_class("MarginRankingLoss", F_.margin_ranking_loss, "Ranking of two inputs by targets of ±1.", margin=0.0, reduction="mean")
TripletMarginLoss = _loss_class("TripletMarginLoss", F_.triplet_margin_loss, "Anchor closer to the positive than to the negative by a margin.",
                                margin=1.0, p=2.0, eps=1e-6, swap=False, reduction="mean")
del F_
