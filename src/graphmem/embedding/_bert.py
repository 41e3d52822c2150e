"""The BERT encoder of all-MiniLM-L6-v2 as plain float32 numpy, in inference mode.

It follows Hugging Face `BertModel` step by step (absolute positions, post-layer-norm, exact erf
GELU) so that its vectors match the reference implementation's. The sentences of a batch are
*packed*: the dense layers, nearly all the arithmetic, run on one matrix holding every real token
of every sentence, so no work is spent on padding; only attention, which mixes tokens within a
sentence, pads, and only within groups of sentences of similar length.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["Bert", "Packed"]

Floats = npt.NDArray[np.float32]
Ints = npt.NDArray[np.intp]

# Abramowitz & Stegun 7.1.26: erf to within 1.5e-7, below float32's own rounding of the result.
_ERF_P = 0.3275911
_ERF_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)

# Elementwise work is done in slices this many values long, so that the temporaries stay in cache.
_SLICE = 1 << 15


@dataclass(frozen=True)
class Packed:
    """A batch of token-id sequences laid end to end, with what attention needs to unpack them.

    Attributes:
        ids: every token id of every sequence, in order.
        positions: each token's position in its own sequence.
        starts: where each sequence begins in `ids`.
        lengths: each sequence's length.
        groups: for each group of sequences, a (sequences, longest) matrix of rows into `ids`
            (padding points at the group's first row) and the additive attention mask.
    """

    ids: Ints
    positions: Ints
    starts: Ints
    lengths: Ints
    groups: tuple[tuple[Ints, Floats, npt.NDArray[np.bool_]], ...]

    @classmethod
    def of(cls, sequences: Sequence[Sequence[int]], group_size: int) -> Packed:
        """Pack `sequences` (best sorted by length, so that each group pads little)."""
        lengths = np.fromiter((len(seq) for seq in sequences), dtype=np.intp, count=len(sequences))
        starts = np.zeros(len(sequences), dtype=np.intp)
        np.cumsum(lengths[:-1], out=starts[1:])
        ids = np.fromiter((token for seq in sequences for token in seq), dtype=np.intp, count=int(lengths.sum()))
        positions = np.arange(len(ids), dtype=np.intp) - np.repeat(starts, lengths)
        groups = []
        for first in range(0, len(sequences), group_size):
            group_starts = starts[first : first + group_size]
            group_lengths = lengths[first : first + group_size]
            columns = np.arange(int(group_lengths.max()), dtype=np.intp)
            valid = columns[None, :] < group_lengths[:, None]
            rows = np.where(valid, group_starts[:, None] + columns[None, :], group_starts[0])
            # Hugging Face adds the lowest float32 to the scores of padding keys; so do we.
            mask = np.where(valid, 0.0, np.finfo(np.float32).min).astype(np.float32)[:, None, None, :]
            groups.append((rows, mask, valid))
        return cls(ids, positions, starts, lengths, tuple(groups))


@dataclass(frozen=True)
class _Layer:
    # The query, key and value projections side by side: one product instead of three.
    query_key_value: tuple[Floats, Floats]
    attention_out: tuple[Floats, Floats]
    attention_norm: tuple[Floats, Floats]
    intermediate: tuple[Floats, Floats]
    output: tuple[Floats, Floats]
    output_norm: tuple[Floats, Floats]


class Bert:
    """The encoder: token ids in, one contextual vector per token out."""

    def __init__(
        self,
        tensors: dict[str, npt.NDArray[Any]],
        config: dict[str, Any],
        word_rows: Callable[[Ints], Floats] | None = None,
    ) -> None:
        """`word_rows` reads rows of the word-embedding table (by default, from `tensors`)."""
        # config.json is pinned by its digest: hidden_act "gelu", absolute positions, 12 heads of 32.
        self.hidden = int(config["hidden_size"])
        self.heads = int(config["num_attention_heads"])
        self.eps = float(config["layer_norm_eps"])
        self.max_positions = int(config["max_position_embeddings"])

        def linear(*prefixes: str) -> tuple[Floats, Floats]:
            # Stored (out, in). Products take (in, out): a row-major copy of the transpose makes a
            # short query's products about 40% faster than BLAS reading the transposed view, which
            # with a few rows is bound by how fast it streams the weights (43 MB a query).
            weight = np.concatenate([tensors[f"{prefix}.weight"] for prefix in prefixes])
            bias = np.concatenate([tensors[f"{prefix}.bias"] for prefix in prefixes])
            return np.ascontiguousarray(weight.T), bias

        def norm(prefix: str) -> tuple[Floats, Floats]:
            return tensors[f"{prefix}.weight"], tensors[f"{prefix}.bias"]

        words: Floats = tensors["embeddings.word_embeddings.weight"]
        self.word_rows: Callable[[Ints], Floats] = word_rows or words.__getitem__
        self.position_embeddings: Floats = tensors["embeddings.position_embeddings.weight"]
        # Every token is of type 0: one sentence per input.
        self.type_embedding: Floats = tensors["embeddings.token_type_embeddings.weight"][0]
        self.embedding_norm = norm("embeddings.LayerNorm")
        self.layers = [
            _Layer(
                query_key_value=linear(
                    *(f"encoder.layer.{i}.attention.self.{part}" for part in ("query", "key", "value"))
                ),
                attention_out=linear(f"encoder.layer.{i}.attention.output.dense"),
                attention_norm=norm(f"encoder.layer.{i}.attention.output.LayerNorm"),
                intermediate=linear(f"encoder.layer.{i}.intermediate.dense"),
                output=linear(f"encoder.layer.{i}.output.dense"),
                output_norm=norm(f"encoder.layer.{i}.output.LayerNorm"),
            )
            for i in range(int(config["num_hidden_layers"]))
        ]

    def encode(self, batch: Packed) -> Floats:
        """The last hidden state of every token of `batch`, shape (tokens, hidden), packed like its ids."""
        x = self.word_rows(batch.ids) + self.position_embeddings[batch.positions]
        x += self.type_embedding
        x = self._layer_norm(x, self.embedding_norm)
        for layer in self.layers:
            x = self._layer_norm(self._attention(x, layer, batch) + x, layer.attention_norm)
            inner = _gelu(_dense(x, layer.intermediate))
            x = self._layer_norm(_dense(inner, layer.output) + x, layer.output_norm)
        return x

    def _attention(self, x: Floats, layer: _Layer, batch: Packed) -> Floats:
        size = self.hidden // self.heads
        # Scaling the queries is cheaper than scaling the scores, and the same up to rounding.
        projected = _dense(x, layer.query_key_value)
        query, key, value = (projected[:, k * self.hidden : (k + 1) * self.hidden] for k in range(3))
        query *= np.float32(1.0 / np.sqrt(size))
        context = np.empty_like(x)
        for rows, mask, valid in batch.groups:
            count, longest = rows.shape

            def heads(packed: Floats, rows: Ints = rows, count: int = count, longest: int = longest) -> Floats:
                return packed[rows].reshape(count, longest, self.heads, size).transpose(0, 2, 1, 3)

            scores = heads(query) @ heads(key).transpose(0, 1, 3, 2)
            scores += mask
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            mixed = (scores @ heads(value)).transpose(0, 2, 1, 3).reshape(count, longest, self.hidden)
            context[rows[valid]] = mixed[valid]
        return _dense(context, layer.attention_out)

    def _layer_norm(self, x: Floats, weights: tuple[Floats, Floats]) -> Floats:
        x -= x.mean(axis=-1, keepdims=True)
        variance = np.mean(np.square(x), axis=-1, keepdims=True)
        variance += np.float32(self.eps)
        x /= np.sqrt(variance)
        x *= weights[0]
        x += weights[1]
        return x


def _dense(x: Floats, weights: tuple[Floats, Floats]) -> Floats:
    out: Floats = x @ weights[0]
    out += weights[1]
    return out


def _gelu(x: Floats) -> Floats:
    """GELU with the exact erf, in place: x * Phi(x) = relu(x) - |x| / 2 * erfc(|x| / sqrt 2)."""
    flat = x.reshape(-1)
    a1, a2, a3, a4, a5 = (np.float32(c / 2) for c in _ERF_A)
    p = np.float32(_ERF_P / np.sqrt(2.0))
    for begin in range(0, flat.size, _SLICE):
        v = flat[begin : begin + _SLICE]
        magnitude = np.abs(v)
        t = magnitude * p
        t += np.float32(1.0)
        np.reciprocal(t, out=t)
        # erfc(z) = poly(t) * exp(-z^2) for z >= 0; the halving is folded into the coefficients.
        tail = t * a5
        for coefficient in (a4, a3, a2, a1):
            tail += coefficient
            tail *= t
        gauss = np.square(v)
        gauss *= np.float32(-0.5)
        np.exp(gauss, out=gauss)
        tail *= gauss
        tail *= magnitude
        np.maximum(v, np.float32(0.0), out=v)
        v -= tail
    return x
