"""A tiny random BERT folder (BertForMaskedLM layout) written with numpy only: config.json,
model.safetensors (F32: bert.* with the pooler, the MLM head cls.predictions.* and the
next-sentence head) and a WordPiece vocab.txt. The Python twin of tests/support/
encoder_fixture.h's bert folder, for the Python session's encoder test."""

import json
import os

import numpy as np

from tiny_gpt2 import _safetensors

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat", "dog", "a", "##s",
         "he", "she", "it", "is", "was", "big", "small", "red", "blue", ".", ","]


def write_tiny_bert(folder, layers=2, heads=2, hidden=8, inner=16, positions=32, seed=3):
    """Writes the folder and returns it."""
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(seed)
    V, E, F = len(VOCAB), hidden, inner

    def values(*shape, scale=0.4, offset=0.0):
        return (offset + scale * rng.standard_normal(shape)).astype(np.float32)

    t = {}

    def linear(name, n_in, n_out):
        t[name + ".weight"] = values(n_out, n_in)
        t[name + ".bias"] = values(n_out, scale=0.1)

    def norm(name):
        t[name + ".weight"] = values(E, scale=0.1, offset=1.0)
        t[name + ".bias"] = values(E, scale=0.1)

    t["bert.embeddings.word_embeddings.weight"] = values(V, E)
    t["bert.embeddings.position_embeddings.weight"] = values(positions, E, scale=0.2)
    t["bert.embeddings.token_type_embeddings.weight"] = values(2, E, scale=0.2)
    norm("bert.embeddings.LayerNorm")
    for layer in range(layers):
        p = f"bert.encoder.layer.{layer}."
        linear(p + "attention.self.query", E, E)
        linear(p + "attention.self.key", E, E)
        linear(p + "attention.self.value", E, E)
        linear(p + "attention.output.dense", E, E)
        norm(p + "attention.output.LayerNorm")
        linear(p + "intermediate.dense", E, F)
        linear(p + "output.dense", F, E)
        norm(p + "output.LayerNorm")
    linear("bert.pooler.dense", E, E)
    linear("cls.predictions.transform.dense", E, E)
    norm("cls.predictions.transform.LayerNorm")
    t["cls.predictions.bias"] = values(V, scale=0.1)
    t["cls.predictions.decoder.weight"] = t["bert.embeddings.word_embeddings.weight"]
    t["cls.predictions.decoder.bias"] = t["cls.predictions.bias"]
    linear("cls.seq_relationship", E, 2)
    config = {"model_type": "bert", "architectures": ["BertForMaskedLM"], "hidden_size": E,
              "intermediate_size": F, "num_hidden_layers": layers, "num_attention_heads": heads,
              "max_position_embeddings": positions, "vocab_size": V, "type_vocab_size": 2,
              "layer_norm_eps": 1e-12, "hidden_act": "gelu", "position_embedding_type": "absolute",
              "hidden_dropout_prob": 0.1, "pad_token_id": 0}
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f)
    with open(os.path.join(folder, "vocab.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(VOCAB) + "\n")
    with open(os.path.join(folder, "model.safetensors"), "wb") as f:
        f.write(_safetensors(t))
    return folder
