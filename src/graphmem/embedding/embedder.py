"""The loaded sentence-embedding model: texts in, unit-length 384-dimension vectors out."""

from __future__ import annotations

import json
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import numpy.typing as npt
from threadpoolctl import ThreadpoolController  # type: ignore[import-untyped]  # ships no type information
from tokenizers import Tokenizer

from graphmem.embedding._bert import Bert, Packed
from graphmem.embedding._folder import MODEL_NAME, TRUSTED_SHA256, ModelFolder, find_model_folder
from graphmem.embedding._weights import FileRows, load_tensors

__all__ = ["Embedder", "open_embedder"]

# Sentences are encoded at most this many at a time and ...
_BATCH_SENTENCES = 64
# ... this many tokens at a time, which bounds the working memory (about 40 MB at 4,096 tokens)
# whatever the caller hands in.
_BATCH_TOKENS = 4096
# Attention pads each sentence to the longest of its group; groups of 8 sorted sentences pad little.
_GROUP = 8
# BLAS runs on one thread inside embed(). Two OpenBLAS threads were slower here, not faster,
# whenever the other core was busy (as it is in a server): a 6-token query took 8-15 ms instead
# of 1 ms per product, and a batch with 256-token sentences 25 s instead of 1.5 s, each of
# attention's small products waiting for a descheduled thread. One thread also leaves the other
# core to the server's requests while a batch is being embedded.
_BLAS_THREADS = 1
# With workers > 1, a batch is shared between that many threads, each running its own sentences
# through the whole model (numpy releases the GIL in its products): they meet once per batch,
# not once per product as BLAS threads do, so a busy core delays a batch, never stalls it.
# A batch smaller than this is not worth a thread hop.
_SHARED_FROM = 8


class Embedder:
    """all-MiniLM-L6-v2, run in numpy; several threads may embed at once (a server's worker
    embeds batches while its searches embed queries).

    Attributes:
        name: the model's name.
        fingerprint: a short stable id of the weights, to store beside the vectors they made.
        dimensions: the length of each vector.
        max_tokens: texts longer than this many tokens are cut, as the reference implementation does.
    """

    name: str = MODEL_NAME
    dimensions: int

    def __init__(self, folder: ModelFolder, workers: int = 1) -> None:
        config = json.loads(folder.file("config.json").read_text(encoding="utf-8"))
        sentence_config = json.loads(folder.file("sentence_bert_config.json").read_text(encoding="utf-8"))
        self.fingerprint = f"{MODEL_NAME}/{TRUSTED_SHA256['model.safetensors'][:8]}"
        self.max_tokens = int(sentence_config["max_seq_length"])
        # The encoder layers' weights are copied into a faster layout (see Bert), so they are read
        # rather than mapped; the word table is read a few rows at a time (see FileRows), and the
        # small position and type tables stay mapped.
        weights = folder.file("model.safetensors")
        tensors = load_tensors(weights, read=lambda name: name.startswith("encoder."))
        self._bert = Bert(tensors, config, FileRows(weights, "embeddings.word_embeddings.weight").take)
        self.dimensions = self._bert.hidden
        self._tokenizer = Tokenizer.from_file(str(folder.file("tokenizer.json")))
        # tokenizer.json itself pads to 128 and cuts at 128; the model is used at max_seq_length.
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(max_length=self.max_tokens)
        self._threads = ThreadpoolController()
        self._workers = max(1, workers)
        self._pool = ThreadPoolExecutor(self._workers, "graphmem-embed") if self._workers > 1 else None

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """One unit-length float32 row per text, in the order given; shape (len(texts), 384).

        Leading and trailing white space is ignored and an empty text has a vector too, as with
        sentence-transformers.
        """
        # One text at a time: encode_batch would start the tokenizer's thread pool, which then
        # warns on every later fork of this process; tokenizing is a small part of the cost.
        sequences = [self._token_ids(text) for text in texts]
        vectors = np.empty((len(texts), self.dimensions), dtype=np.float32)
        # Sorted by length, so that each attention group (and each worker's share) holds sentences
        # of about the same length and pads little.
        order = sorted(range(len(sequences)), key=lambda i: -len(sequences[i]))
        # The limit is OpenBLAS's, process-wide, and restored on leaving.
        with self._threads.limit(limits=_BLAS_THREADS, user_api="blas"):
            for chunk in _chunks(order, [len(seq) for seq in sequences]):
                if self._pool is None or len(chunk) < _SHARED_FROM:
                    vectors[chunk] = self._pooled([sequences[i] for i in chunk])
                    continue
                # Every n-th of the sorted sentences: each share holds as many tokens as the others.
                shares = [chunk[k :: self._workers] for k in range(self._workers)]
                results = self._pool.map(self._pooled, [[sequences[i] for i in share] for share in shares])
                for share, pooled in zip(shares, results, strict=True):
                    vectors[share] = pooled
        return vectors

    def whole_words(self, text: str) -> list[str]:
        """The words of `text` the model's vocabulary holds whole, lower-case, in order.

        A word the vocabulary lacks is cut into pieces ("zq" is "z" "##q"), whose vectors carry
        little of any meaning: a query made only of such pieces is close to nothing in particular.
        """
        tokens = self._tokenizer.encode(_valid_text(text).strip()).tokens[1:-1]  # without [CLS] and [SEP]
        return [
            token
            for index, token in enumerate(tokens)
            if not token.startswith("##") and not (index + 1 < len(tokens) and tokens[index + 1].startswith("##"))
        ]

    def _token_ids(self, text: str) -> list[int]:
        """The word-piece ids of `text`, stripped, cut at max_tokens, with [CLS] and [SEP]."""
        return list(self._tokenizer.encode(_valid_text(text).strip()).ids)

    def _pooled(self, sequences: list[list[int]]) -> npt.NDArray[np.float32]:
        """The sentence vectors of `sequences`: mean of each one's token vectors, then L2-normalised."""
        batch = Packed.of(sequences, _GROUP)
        hidden = self._bert.encode(batch)
        pooled = np.add.reduceat(hidden, batch.starts, axis=0) / batch.lengths[:, None].astype(np.float32)
        pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), np.float32(1e-12))
        return pooled.astype(np.float32, copy=False)


def _valid_text(text: str) -> str:
    """`text` as the tokenizer takes it: valid Unicode. A lone surrogate becomes U+FFFD, and a pair
    left as two code points becomes the one character it encodes."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def _chunks(order: list[int], lengths: list[int]) -> list[list[int]]:
    """`order` cut into runs of at most _BATCH_SENTENCES sentences and about _BATCH_TOKENS tokens."""
    chunks: list[list[int]] = []
    current: list[int] = []
    tokens = 0
    for index in order:
        if current and (len(current) == _BATCH_SENTENCES or tokens + lengths[index] > _BATCH_TOKENS):
            chunks.append(current)
            current, tokens = [], 0
        current.append(index)
        tokens += lengths[index]
    if current:
        chunks.append(current)
    return chunks


def open_embedder(folder: Path | None = None, workers: int = 1) -> Embedder:
    """Verify the model folder (`folder`, or the installed package's) and load the model from it."""
    return Embedder(find_model_folder(folder), workers)
