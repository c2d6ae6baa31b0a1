"""Recurrent layers and attention with PyTorch's names, parameter layouts, initialisation and
defaults: ``LSTM``, ``GRU`` and ``MultiheadAttention``, written over nabla's differentiable ops."""

from __future__ import annotations

import math

from .. import _nabla
from . import functional


def _base():
    from . import Module, Parameter, _uniform

    return Module, Parameter, _uniform


Module, Parameter, _uniform = _base()


class _RNNBase(Module):
    gates = 1

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dtype=None):
        super().__init__()
        dtype = dtype or _nabla.float32
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first = bias, batch_first
        bound = 1.0 / math.sqrt(hidden_size)
        for k in range(num_layers):
            width = input_size if k == 0 else hidden_size
            setattr(self, f"weight_ih_l{k}", _uniform((self.gates * hidden_size, width), bound, dtype))
            setattr(self, f"weight_hh_l{k}", _uniform((self.gates * hidden_size, hidden_size), bound, dtype))
            if bias:
                setattr(self, f"bias_ih_l{k}", _uniform((self.gates * hidden_size,), bound, dtype))
                setattr(self, f"bias_hh_l{k}", _uniform((self.gates * hidden_size,), bound, dtype))

    def _layer(self, k):
        get = lambda name: getattr(self, f"{name}_l{k}") if self.bias or name.startswith("weight") else None
        return get("weight_ih"), get("weight_hh"), get("bias_ih"), get("bias_hh")

    def _zeros(self, batch, dtype):
        return _nabla.zeros(self.num_layers, batch, self.hidden_size, dtype=dtype)

    def _run(self, x, states, cell):
        """Runs `cell(x_t, state, weights) -> state` (the state's first entry is the output) over
        time and layers; returns the last layer's outputs and each layer's final state."""
        if self.batch_first:
            x = x.swapaxes(0, 1)
        layer_input = [x[t] for t in range(x.shape[0])]
        finals = []
        for k in range(self.num_layers):
            weights, state, outputs = self._layer(k), states[k], []
            for xt in layer_input:
                state = cell(xt, state, weights)
                outputs.append(state[0])
            finals.append(state)
            layer_input = outputs
        out = _nabla.stack(layer_input)
        return (out.swapaxes(0, 1) if self.batch_first else out), finals


class LSTM(_RNNBase):
    """A multi-layer LSTM: input ``[T, N, input_size]`` (``[N, T, ...]`` with ``batch_first``);
    returns ``(output, (h_n, c_n))``. Gates in PyTorch's order: input, forget, cell, output."""

    gates = 4

    @staticmethod
    def _cell(xt, state, weights):
        (h, c), (w_ih, w_hh, b_ih, b_hh) = state, weights
        i, f, g, o = (functional.linear(xt, w_ih, b_ih) + functional.linear(h, w_hh, b_hh)).chunk(4, axis=1)
        c = _nabla.sigmoid(f) * c + _nabla.sigmoid(i) * _nabla.tanh(g)
        return _nabla.sigmoid(o) * _nabla.tanh(c), c

    def forward(self, x, state=None):
        batch = x.shape[0 if self.batch_first else 1]
        h0, c0 = state if state is not None else (self._zeros(batch, x.dtype), self._zeros(batch, x.dtype))
        out, finals = self._run(x, [(h0[k], c0[k]) for k in range(self.num_layers)], self._cell)
        return out, (_nabla.stack([s[0] for s in finals]), _nabla.stack([s[1] for s in finals]))


class GRU(_RNNBase):
    """A multi-layer GRU: input ``[T, N, input_size]``; returns ``(output, h_n)``. Gates in
    PyTorch's order: reset, update, new."""

    gates = 3

    @staticmethod
    def _cell(xt, state, weights):
        (h,), (w_ih, w_hh, b_ih, b_hh) = state, weights
        gi = functional.linear(xt, w_ih, b_ih).chunk(3, axis=1)
        gh = functional.linear(h, w_hh, b_hh).chunk(3, axis=1)
        r = _nabla.sigmoid(gi[0] + gh[0])
        z = _nabla.sigmoid(gi[1] + gh[1])
        n = _nabla.tanh(gi[2] + r * gh[2])
        return ((1 - z) * n + z * h,)

    def forward(self, x, h0=None):
        batch = x.shape[0 if self.batch_first else 1]
        h0 = h0 if h0 is not None else self._zeros(batch, x.dtype)
        out, finals = self._run(x, [(h0[k],) for k in range(self.num_layers)], self._cell)
        return out, _nabla.stack([s[0] for s in finals])


class MultiheadAttention(Module):
    """Multi-head scaled dot-product attention with PyTorch's parameters (``in_proj_weight``
    ``[3E, E]`` Xavier-uniform, zero biases, ``out_proj``), inputs ``[L, N, E]`` (``[N, L, E]`` with
    ``batch_first``); returns ``(output, weights averaged over heads)``. ``attn_mask`` is a bool
    mask (``True``: not allowed) or an additive float mask of shape ``[L, S]``. With
    ``need_weights=False`` the attention is ``functional.scaled_dot_product_attention`` (fused on the
    CPU without a mask)."""

    def __init__(self, embed_dim: int, num_heads: int, bias: bool = True, batch_first: bool = False, dtype=None):
        super().__init__()
        from . import Linear

        if embed_dim % num_heads:
            raise ValueError(f"embed_dim {embed_dim} must divide by num_heads {num_heads}")
        dtype = dtype or _nabla.float32
        self.embed_dim, self.num_heads, self.batch_first = embed_dim, num_heads, batch_first
        bound = math.sqrt(6.0 / (embed_dim + 3 * embed_dim))
        self.in_proj_weight = _uniform((3 * embed_dim, embed_dim), bound, dtype)
        self.in_proj_bias = Parameter(_nabla.zeros(3 * embed_dim, dtype=dtype)) if bias else None
        self.out_proj = Linear(embed_dim, embed_dim, bias=bias, dtype=dtype)
        if bias:
            self.out_proj.bias.data = _nabla.zeros(embed_dim, dtype=dtype)

    def forward(self, query, key, value, need_weights: bool = True, attn_mask=None, average_attn_weights: bool = True):
        if self.batch_first:
            query, key, value = (t.swapaxes(0, 1) for t in (query, key, value))
        e, heads = self.embed_dim, self.num_heads
        d = e // heads
        w = self.in_proj_weight
        b = self.in_proj_bias
        q = functional.linear(query, w[:e], None if b is None else b[:e])
        k = functional.linear(key, w[e : 2 * e], None if b is None else b[e : 2 * e])
        v = functional.linear(value, w[2 * e :], None if b is None else b[2 * e :])
        tgt, batch, src = query.shape[0], query.shape[1], key.shape[0]
        split = lambda t, n: t.reshape(n, batch * heads, d).swapaxes(0, 1)  # [N*H, len, d]
        q, k, v = split(q, tgt), split(k, src), split(v, src)
        if not need_weights:
            # Without the weights, the attention is the fused scaled_dot_product_attention (whose
            # bool masks mark the keys that may be attended to: the complement of this module's).
            mask = None if attn_mask is None else _nabla.tensor(attn_mask)
            if mask is not None and mask.dtype == _nabla.bool:
                mask = ~mask
            out = functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
            out = self.out_proj(out.swapaxes(0, 1).reshape(tgt, batch, e))
            return (out.swapaxes(0, 1) if self.batch_first else out), None
        scores = (q @ k.swapaxes(1, 2)) / math.sqrt(d)
        if attn_mask is not None:
            mask = _nabla.tensor(attn_mask)
            scores = _nabla.where(mask, float("-inf"), scores) if mask.dtype == _nabla.bool else scores + mask
        weights = scores.softmax(-1)
        out = (weights @ v).swapaxes(0, 1).reshape(tgt, batch, e)
        out = self.out_proj(out)
        if self.batch_first:
            out = out.swapaxes(0, 1)
        weights = weights.reshape(batch, heads, tgt, src)
        return out, (weights.mean(1) if average_attn_weights else weights)
