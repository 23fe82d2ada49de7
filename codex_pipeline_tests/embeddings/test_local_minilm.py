"""The local all-MiniLM-L6-v2 embedder: offline load, SHA check, vectors, long inputs.

Fidelity to the official model is checked against sentence-transformers' ``encode`` where
the ``[torch]`` extra is installed (the 3.11 test lane); everything else runs on the
default install."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codex_pipeline.embeddings import WeightsMismatch, make_embedder
from codex_pipeline.embeddings.local_minilm import (
    MAX_CONTENT_WORDPIECES,
    OFFICIAL_WEIGHTS_SHA256,
    LocalMiniLMEmbedder,
    _windows,
    packaged_model_dir,
    verify_weights,
)
from codex_pipeline.embeddings.runtimes import LocalModelSettings

#: The real model's weights, vectors and long-input policy: the slow lane.
pytestmark = pytest.mark.slow

# A council item first (well over the 254-wordpiece limit on its own), then a long
# passage on an unrelated topic that a truncating encoder never sees.
COUNCIL = " ".join(
    f"Item {i}: the commission discussed the {['budget', 'zoning', 'library', 'transit'][i % 4]} proposal, "
    f"heard {i % 5 + 1} public comments about parking near Poyntz Avenue, and voted {i % 3 + 2} to 1."
    for i in range(12)
)
REEF = " ".join(
    f"Coral polyps of the {['staghorn', 'brain', 'elkhorn', 'pillar'][i % 4]} species host symbiotic algae "
    f"that photosynthesize; when ocean water warms by {i % 3 + 1} degrees the corals bleach, "
    f"reef fish lose shelter, and divers record fewer {['parrotfish', 'groupers', 'sea turtles'][i % 3]}."
    for i in range(24)
)
LONG_TEXT = COUNCIL + "\n\n" + REEF
SHORT_TEXTS = [
    "The city commission approved the budget.",
    "Permit 2024-117: new deck and fireplace.",
    "Ein Satz auf Deutsch, mit Umlauten: Größe.",
    "",  # the local model accepts empty text
]


def wordpieces(embedder: LocalMiniLMEmbedder, text: str) -> list[int]:
    return embedder.tokenize(text)


@pytest.fixture(scope="module")
def sentence_transformer():
    """sentence-transformers' own model on the packaged files: the reference (the [torch] extra)."""
    st = pytest.importorskip("sentence_transformers")
    return st.SentenceTransformer(str(packaged_model_dir()), device="cpu", local_files_only=True)


def test_packaged_weights_are_the_official_file() -> None:
    weights = packaged_model_dir() / "model.safetensors"
    assert weights.is_file()
    assert verify_weights(packaged_model_dir()) == OFFICIAL_WEIGHTS_SHA256


def test_loads_and_embeds_with_no_network(tmp_path: Path) -> None:
    """In a fresh process whose sockets refuse to connect, with no HF env vars set."""
    script = textwrap.dedent(
        """
        import socket
        def refuse(self, *a, **k):
            raise OSError("network access attempted")
        socket.socket.connect = refuse
        socket.socket.connect_ex = refuse
        socket.create_connection = refuse
        from codex_pipeline.embeddings import make_embedder
        e = make_embedder("local")
        r = e.embed(["offline hello"])
        print(r.vectors.shape, e.model)
        """
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "TRANSFORMERS_", "CODEX_EMBEDDER"))}
    env["HF_HOME"] = str(tmp_path / "hf-home")  # an empty cache: nothing to fall back on
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "(1, 384) all-MiniLM-L6-v2" in proc.stdout
    assert not (tmp_path / "hf-home").exists() or not any((tmp_path / "hf-home").rglob("*.safetensors"))


def test_tampered_weights_are_refused(tmp_path: Path) -> None:
    copy = tmp_path / "model"
    shutil.copytree(packaged_model_dir(), copy)
    weights = copy / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[len(data) // 2] ^= 0x01  # one bit
    weights.write_bytes(bytes(data))
    with pytest.raises(WeightsMismatch, match=f"refusing to load .*expected {OFFICIAL_WEIGHTS_SHA256}"):
        LocalMiniLMEmbedder(model_dir=copy)


def test_missing_weights_are_refused(tmp_path: Path) -> None:
    copy = tmp_path / "model"
    shutil.copytree(packaged_model_dir(), copy, ignore=shutil.ignore_patterns("model.safetensors"))
    with pytest.raises(WeightsMismatch, match="does not exist"):
        LocalMiniLMEmbedder(model_dir=copy)


def test_untouched_copy_is_accepted(tmp_path: Path) -> None:
    copy = tmp_path / "model"
    shutil.copytree(packaged_model_dir(), copy)
    e = LocalMiniLMEmbedder(model_dir=copy)
    assert e.weights_sha256 == OFFICIAL_WEIGHTS_SHA256
    assert e.version == LocalMiniLMEmbedder().version  # same files, same fingerprint


def test_version_fingerprint() -> None:
    e = make_embedder("local")
    assert (e.model, e.dimensions) == ("all-MiniLM-L6-v2", 384)
    assert f"weights=sha256:{OFFICIAL_WEIGHTS_SHA256[:16]}" in e.version
    assert "dims=384" in e.version and "long=window254+overlap32" in e.version
    assert LocalMiniLMEmbedder(window_overlap=16).version != e.version  # the policy is in it
    assert LocalMiniLMEmbedder(batch_size=8).version == e.version  # batch size does not change vectors


def test_vectors_are_384d_normalized_and_match_a_bare_encode(sentence_transformer) -> None:
    """In fp32 the OpenVINO export computes what ``encode`` computes; in bf16 within 1e-4 of cosine."""
    fp32 = LocalMiniLMEmbedder(options=LocalModelSettings(precision="fp32"))
    res = fp32.embed(SHORT_TEXTS)
    assert res.vectors.dtype == np.float32 and res.vectors.shape == (len(SHORT_TEXTS), 384)
    np.testing.assert_allclose(np.linalg.norm(res.vectors, axis=1), 1.0, atol=1e-5)
    assert res.long_inputs == 0 and res.windows == 0 and res.requests == 1
    bare = sentence_transformer.encode(SHORT_TEXTS, normalize_embeddings=True)
    np.testing.assert_allclose(res.vectors, bare, atol=2e-6)
    default = LocalMiniLMEmbedder().embed(SHORT_TEXTS).vectors
    assert ((default * bare).sum(axis=1) > 0.9999).all()


def test_vectors_do_not_depend_on_batch_companions(local_embedder: LocalMiniLMEmbedder) -> None:
    alone = local_embedder.embed([SHORT_TEXTS[0]]).vectors[0]
    mixed = local_embedder.embed([LONG_TEXT, *SHORT_TEXTS]).vectors[1]
    np.testing.assert_allclose(alone, mixed, atol=1e-3)  # bf16: the batch's padded width moves rounding (<5e-4)
    fp32 = LocalMiniLMEmbedder(options=LocalModelSettings(precision="fp32"))
    np.testing.assert_allclose(fp32.embed([SHORT_TEXTS[0]]).vectors[0], fp32.embed([LONG_TEXT, *SHORT_TEXTS]).vectors[1],
                               atol=1e-6)


def test_long_input_is_not_truncated(local_embedder: LocalMiniLMEmbedder) -> None:
    enc = local_embedder.load().tokenizer.encode(LONG_TEXT, add_special_tokens=False)
    assert len(enc.ids) > 3 * MAX_CONTENT_WORDPIECES
    res = local_embedder.embed([LONG_TEXT])
    ours = res.vectors[0]
    assert res.long_inputs == 1
    wins = _windows(enc.word_ids, MAX_CONTENT_WORDPIECES, 32)
    assert res.windows == len(wins) >= 4

    # What a truncating encoder sees is the first 254 wordpieces; Codex's vector is not that one:
    # the rest of the text counts.
    prefix = LONG_TEXT[: enc.offsets[MAX_CONTENT_WORDPIECES - 1][1]]
    truncated, reef = local_embedder.embed([prefix, REEF[:1000]]).vectors
    assert float(ours @ truncated) < 0.9
    assert float(ours @ reef) > float(truncated @ reef) + 0.1
    np.testing.assert_allclose(np.linalg.norm(ours), 1.0, atol=1e-5)
    # and it is the re-normalized, wordpiece-weighted mean of the window vectors
    texts = [LONG_TEXT[enc.offsets[s][0] : enc.offsets[e - 1][1]] for s, e in wins]
    wv = local_embedder.embed(texts).vectors
    pooled = (wv * np.array([e - s for s, e in wins])[:, None]).sum(0)
    np.testing.assert_allclose(ours, pooled / np.linalg.norm(pooled), atol=1e-5)
    # every window fits the model: re-tokenized, each has at most 254 wordpieces
    for t in texts:
        assert len(wordpieces(local_embedder, t)) <= MAX_CONTENT_WORDPIECES


def test_truncating_encode_keeps_only_the_prefix(sentence_transformer) -> None:
    """The reason for windows: sentence-transformers' ``encode`` drops everything after 254 wordpieces."""
    enc = sentence_transformer.tokenizer(LONG_TEXT, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
    prefix = LONG_TEXT[: enc["offset_mapping"][MAX_CONTENT_WORDPIECES - 1][1]]
    full, head = sentence_transformer.encode([LONG_TEXT, prefix], normalize_embeddings=True)
    assert float(full @ head) > 0.999


def test_text_at_the_limit_is_embedded_whole(local_embedder: LocalMiniLMEmbedder) -> None:
    words = ["alpha"] * MAX_CONTENT_WORDPIECES
    at_limit, over = " ".join(words), " ".join([*words, "omega"])
    assert len(wordpieces(local_embedder, at_limit)) == MAX_CONTENT_WORDPIECES
    res = local_embedder.embed([at_limit, over])
    assert res.long_inputs == 1 and res.windows == 2


def test_on_batch_reports_every_block_once(local_embedder: LocalMiniLMEmbedder) -> None:
    e = LocalMiniLMEmbedder(block_size=2)
    seen: list[int] = []
    res = e.embed(SHORT_TEXTS + ["one more"], on_batch=lambda idx, vecs: seen.extend(int(i) for i in idx))
    assert seen == list(range(5)) and res.requests == 3


@settings(max_examples=300, deadline=None)
@given(
    word_lengths=st.lists(st.integers(1, 100), min_size=1, max_size=400),
    overlap=st.integers(0, 100),
)
def test_windows_cover_everything_on_word_boundaries(word_lengths: list[int], overlap: int) -> None:
    word_ids = [w for w, n in enumerate(word_lengths) for _ in range(n)]
    n = len(word_ids)
    starts = {0} | {j for j in range(1, n) if word_ids[j] != word_ids[j - 1]} | {n}
    wins = _windows(word_ids, MAX_CONTENT_WORDPIECES, overlap)
    assert wins[0][0] == 0 and wins[-1][1] == n
    for (s, e), nxt in zip(wins, [*wins[1:], None]):
        assert 0 < e - s <= MAX_CONTENT_WORDPIECES
        assert s in starts and e in starts  # never cut inside a word
        if nxt is not None:
            assert s < nxt[0] <= e  # progress, and no gap between windows
    if n <= MAX_CONTENT_WORDPIECES:
        assert wins == [(0, n)]
