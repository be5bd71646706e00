// A family's GGUF row, after llama.cpp's llama-arch.cpp (LLM_ARCH_NAMES, LLM_KV_NAMES,
// LLM_TENSOR_NAMES): the general.architecture a converted file says, which of its
// `{arch}.*` keys stand for which config.json keys, its tensor names against the family's
// Hugging Face ones, and what convert_hf_to_gguf changed in the stored tensors. A decoder
// family that llama.cpp also runs points at one (Family::gguf, formats/models/families.h);
// formats/models/gguf_model.cpp turns a file's metadata into config.json with it and hands
// that to the family's own reader, so the family describes the model once.
//
// Everything here is constant data (spans over constexpr arrays, a function pointer), so a
// row defined in one family file is usable from any other file at any time.
#pragma once

#include <span>

#include <nlohmann/json_fwd.hpp>

namespace attn::io {

// A name in a GGUF file and the Hugging Face name it stands for: a metadata key without the
// "{arch}." prefix and its config.json key, or a tensor module (without ".weight" /
// ".bias") and the family's module.
struct GgufName {
  const char* gguf;
  const char* hf;
};

struct GgufArchitecture {
  const char* name = nullptr;                 // general.architecture (e.g. llama, gptneox)
  std::span<const GgufName> sizes = {};       // "{arch}.<gguf>" -> config.json <hf>: the shared sizes
  std::span<const GgufName> keys = {};        // the same for the family's own keys (may be empty)
  std::span<const GgufName> globals = {};     // tensors outside the layers: "token_embd" -> "model.embed_tokens"
  std::span<const GgufName> layer = {};       // "blk.N.<gguf>" -> the plan's layer prefix + "N.<hf>"
  // The config.json key that rope.dimension_count / d_h becomes (nullptr: no rotary key).
  const char* rotaryKey = nullptr;
  // The config.json keys set true when blk.0's q (or fused qkv) bias, or ffn_up bias, is
  // in the file (nullptr: the family has no such key).
  const char* attentionBias = nullptr;
  const char* mlpBias = nullptr;
  // convert_hf_to_gguf's changes: llama's Q and K rows permuted for ggml's adjacent-pair
  // RoPE (LlamaModel.permute); gptneox's query_key_value regrouped as [q; k; v]; Gemma's
  // norm weights stored as 1 + w.
  bool qkPairsInterleaved = false, qkvRegrouped = false, normsPlusOne = false;
  // config.json keys no GGUF key carries, set from those that are there (config holds the
  // mapped keys, vocab_size and tie_word_embeddings); nullptr: none.
  void (*derive)(nlohmann::json& config) = nullptr;
};

// The sizes every Hugging Face decoder but gpt2 names alike, as llama.cpp's keys.
inline constexpr GgufName kGgufHfSizes[] = {{"block_count", "num_hidden_layers"},
                                            {"embedding_length", "hidden_size"},
                                            {"feed_forward_length", "intermediate_size"},
                                            {"attention.head_count", "num_attention_heads"},
                                            {"attention.head_count_kv", "num_key_value_heads"},
                                            {"context_length", "max_position_embeddings"},
                                            {"attention.key_length", "head_dim"},
                                            {"rope.freq_base", "rope_theta"},
                                            {"attention.layer_norm_rms_epsilon", "rms_norm_eps"}};

// The llama layout's tensors (formats/models/families/common.h, planLlamaStyle).
inline constexpr GgufName kGgufLlamaGlobals[] = {
    {"token_embd", "model.embed_tokens"}, {"output_norm", "model.norm"}, {"output", "lm_head"}};
inline constexpr GgufName kGgufLlamaLayer[] = {
    {"attn_norm", "input_layernorm"},    {"attn_q", "self_attn.q_proj"},        {"attn_k", "self_attn.k_proj"},
    {"attn_v", "self_attn.v_proj"},      {"attn_output", "self_attn.o_proj"},   {"attn_q_norm", "self_attn.q_norm"},
    {"attn_k_norm", "self_attn.k_norm"}, {"ffn_norm", "post_attention_layernorm"}, {"ffn_gate", "mlp.gate_proj"},
    {"ffn_up", "mlp.up_proj"},           {"ffn_down", "mlp.down_proj"}};

}  // namespace attn::io
