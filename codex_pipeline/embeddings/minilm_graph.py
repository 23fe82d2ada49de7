"""all-MiniLM-L6-v2 as an ONNX graph, written from the packaged weights with numpy alone.

Exporting with torch would make torch a dependency of every install, and torch is what
the default install leaves out (a package index answers a plain ``torch`` with its
multi-GB CUDA build). The model is a plain BERT encoder (6 layers, 12 heads, 384 wide,
exact GELU, LayerNorm eps 1e-12) followed by the sentence-transformers head (mean pooling
over the attention mask, then L2 normalization), so it is written here op by op from the
``model.safetensors`` tensors. The graph takes ``input_ids`` and ``attention_mask``
(``[batch, seq]``, int64, ``[CLS] … [SEP]`` already added) and returns
``sentence_embedding`` (``[batch, 384]``, unit length): what ``encode`` returns.

:data:`GRAPH_VERSION` changes whenever the graph written here changes, so a cached export
made by an older writer is rebuilt (``minilm_export``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

GRAPH_VERSION = "1"
OPSET = 20  # Gelu is an ONNX op from opset 20; LayerNormalization from 17
LAYERS = 6
HEADS = 12
HIDDEN = 384
LAYER_NORM_EPS = 1e-12
#: an additive attention bias for padding; large enough that softmax gives it 0, finite for bf16
MASKED = -1e9


class _Graph:
    """Collects nodes and initializers; every node output gets a fresh name."""

    def __init__(self) -> None:
        from onnx import helper, numpy_helper

        self._helper, self._numpy_helper = helper, numpy_helper
        self.nodes: list = []
        self.initializers: list = []
        self._count = 0

    def const(self, name: str, value: np.ndarray) -> str:
        self.initializers.append(self._numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def op(self, op_type: str, inputs: list[str], output: str | None = None, **attrs: Any) -> str:
        self._count += 1
        out = output or f"{op_type.lower()}_{self._count}"
        self.nodes.append(self._helper.make_node(op_type, inputs, [out], **attrs))
        return out


def build_minilm_graph(weights_path: Path):  # -> onnx.ModelProto (onnx is imported lazily)
    """The ONNX model of ``weights_path`` (the official ``model.safetensors``), checked by ``onnx.checker``."""
    import onnx
    from onnx import TensorProto, helper
    from safetensors.numpy import load_file

    w = load_file(str(weights_path))
    g = _Graph()
    ids, mask = "input_ids", "attention_mask"

    def layer_norm(x: str, prefix: str) -> str:
        return g.op("LayerNormalization", [x, g.const(f"{prefix}.weight", w[f"{prefix}.weight"]),
                                           g.const(f"{prefix}.bias", w[f"{prefix}.bias"])],
                    axis=-1, epsilon=LAYER_NORM_EPS)

    def linear(x: str, prefix: str) -> str:  # torch's Linear: x @ W.T + b
        weight = g.const(f"{prefix}.weight.T", w[f"{prefix}.weight"].T)
        return g.op("Add", [g.op("MatMul", [x, weight]), g.const(f"{prefix}.bias", w[f"{prefix}.bias"])])

    # embeddings: word + position (0..seq-1) + token type 0, then LayerNorm
    seq_len = g.op("Shape", [ids], start=1, end=2)
    positions = g.op("Slice", [g.const("embeddings.position_embeddings.weight", w["embeddings.position_embeddings.weight"]),
                               g.const("zero", np.array([0], np.int64)), seq_len, g.const("axis0", np.array([0], np.int64))])
    x = g.op("Gather", [g.const("embeddings.word_embeddings.weight", w["embeddings.word_embeddings.weight"]), ids])
    x = g.op("Add", [g.op("Add", [x, positions]),
                     g.const("embeddings.token_type_embeddings.0", w["embeddings.token_type_embeddings.weight"][0])])
    x = layer_norm(x, "embeddings.LayerNorm")

    keep = g.op("Cast", [mask], to=TensorProto.FLOAT)  # [B, T]: 1 for tokens, 0 for padding
    bias = g.op("Mul", [g.op("Sub", [g.const("one", np.array(1.0, np.float32)), keep]),
                        g.const("masked", np.array(MASKED, np.float32))])
    bias = g.op("Unsqueeze", [bias, g.const("axes12", np.array([1, 2], np.int64))])  # [B, 1, 1, T]
    head_dim = HIDDEN // HEADS
    split = g.const("split_heads", np.array([0, -1, HEADS, head_dim], np.int64))
    merge = g.const("merge_heads", np.array([0, -1, HIDDEN], np.int64))
    scale = g.const("scale", np.array(1.0 / np.sqrt(head_dim), np.float32))

    for i in range(LAYERS):
        p = f"encoder.layer.{i}"
        q = g.op("Transpose", [g.op("Reshape", [linear(x, f"{p}.attention.self.query"), split])], perm=[0, 2, 1, 3])
        k = g.op("Transpose", [g.op("Reshape", [linear(x, f"{p}.attention.self.key"), split])], perm=[0, 2, 3, 1])
        v = g.op("Transpose", [g.op("Reshape", [linear(x, f"{p}.attention.self.value"), split])], perm=[0, 2, 1, 3])
        scores = g.op("Add", [g.op("Mul", [g.op("MatMul", [q, k]), scale]), bias])
        context = g.op("MatMul", [g.op("Softmax", [scores], axis=-1), v])
        context = g.op("Reshape", [g.op("Transpose", [context], perm=[0, 2, 1, 3]), merge])
        x = layer_norm(g.op("Add", [linear(context, f"{p}.attention.output.dense"), x]), f"{p}.attention.output.LayerNorm")
        ffn = linear(g.op("Gelu", [linear(x, f"{p}.intermediate.dense")]), f"{p}.output.dense")
        x = layer_norm(g.op("Add", [ffn, x]), f"{p}.output.LayerNorm")

    # sentence-transformers' head: mean over the real tokens, then unit length
    keep3 = g.op("Unsqueeze", [keep, g.const("axis2", np.array([2], np.int64))])
    axis1 = g.const("axis1", np.array([1], np.int64))
    summed = g.op("ReduceSum", [g.op("Mul", [x, keep3]), axis1], keepdims=0)
    counts = g.op("Clip", [g.op("ReduceSum", [keep3, axis1], keepdims=0), g.const("tiny", np.array(1e-9, np.float32))])
    g.op("LpNormalization", [g.op("Div", [summed, counts])], output="sentence_embedding", axis=1, p=2)

    graph = helper.make_graph(
        g.nodes, "all-MiniLM-L6-v2",
        [helper.make_tensor_value_info(ids, TensorProto.INT64, ["batch", "seq"]),
         helper.make_tensor_value_info(mask, TensorProto.INT64, ["batch", "seq"])],
        [helper.make_tensor_value_info("sentence_embedding", TensorProto.FLOAT, ["batch", HIDDEN])],
        g.initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="codex-pipeline",
                              producer_version=GRAPH_VERSION)
    model.ir_version = 9  # what runtimes of 2024 and later read
    onnx.checker.check_model(model)
    return model
