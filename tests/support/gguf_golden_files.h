// The GGUF files whose llama.cpp answers are committed in tests/data/gguf/golden.json
// (tools/gguf_golden/README.md): written deterministically by the tests (and by nothing
// else), evaluated once by llama.cpp through node-llama-cpp. Header-only.
//   emb_<TYPE>     tiny llama, token_embd of that ggml type, every other tensor F32 (llama.cpp
//                  dequantizes an embedding row exactly and multiplies F32 weights in float)
//   mix_*          quantized matrices (llama.cpp quantizes activations to 8 bits inside those
//                  products: compared by top-1 only)
//   tok_spm, tok_gpt2, tok_qwen2   tiny models carrying the tokenizers of
//                  tests/data/tokenizers/ (metaspace_legacy, bytelevel_gpt2, bytelevel_qwen2)
//                  as tokenizer.ggml.* (llama SentencePiece; gpt2 with pre gpt-2 / qwen2)
#pragma once

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/gguf_model_fixture.h"
#include "tests/support/test_files.h"

namespace ggufgolden {

namespace fs = std::filesystem;

struct File {
  std::string name;
  fs::path path;
};

// The ids every model file is evaluated on (BOS 1 first; all below every file's vocabulary).
inline std::vector<int> evaluatedIds() { return {1, 5, 77, 200, 13, 290, 260, 42, 7, 150}; }

// tokenizer.ggml.* from a committed tokenizer.json (vocab in id order, merges, added tokens
// as control tokens; for the llama model: score -id, <unk> unknown, <0xNN> byte tokens).
inline ggufmodel::TokenizerKeys keysFrom(const fs::path& tokenizerJson, const std::string& model,
                                         const std::string& pre) {
  const nlohmann::json j = nlohmann::json::parse(attn::testing::readFile(tokenizerJson));
  ggufmodel::TokenizerKeys k;
  k.model = model;
  k.pre = pre;
  const auto& vocab = j["model"]["vocab"];
  k.tokens.resize(vocab.size());
  for (const auto& [text, id] : vocab.items()) k.tokens[id.get<std::size_t>()] = text;
  for (const auto& a : j["added_tokens"]) {
    const std::size_t id = a["id"].get<std::size_t>();
    if (id >= k.tokens.size()) k.tokens.resize(id + 1);
    k.tokens[id] = a["content"].get<std::string>();
  }
  k.types.assign(k.tokens.size(), 1);
  for (const auto& a : j["added_tokens"]) k.types[a["id"].get<std::size_t>()] = 3;
  if (model == "llama") {
    k.scores.resize(k.tokens.size());
    for (std::size_t i = 0; i < k.tokens.size(); ++i) {
      k.scores[i] = -static_cast<float>(i);
      const std::string& t = k.tokens[i];
      if (t == "<unk>") k.types[i] = 2;
      if (t.size() == 6 && t.rfind("<0x", 0) == 0 && t.back() == '>') k.types[i] = 6;
    }
    k.bos = 1;
    k.eos = 2;
    k.addBos = true;
  } else {
    for (const auto& m : j["model"]["merges"]) k.merges.push_back(m.get<std::string>());
    k.eos = 736;  // <|endoftext|> in both byte-level files
  }
  return k;
}

// Writes every golden file into `dir`; `tokenizers` is tests/data/tokenizers.
inline std::vector<File> writeGoldenFiles(const fs::path& dir, const fs::path& tokenizers) {
  std::vector<File> out;
  auto save = [&](const std::string& name, const std::string& bytes) {
    const fs::path path = dir / (name + ".gguf");
    attn::testing::writeFile(path, bytes);
    out.push_back({name, path});
  };
  const modeltest::Spec llama = ggufmodel::tinySpec("llama");
  for (std::uint32_t type : {0u, 1u, 30u, 8u, 2u, 3u, 6u, 7u, 10u, 11u, 12u, 13u, 14u}) {
    save("emb_" + attn::testing::ggmlTypeNameForTests(type),
         ggufmodel::build(llama, 0, 500 + type, static_cast<int>(type)).gguf);
  }
  save("mix_q4_k_m_like", ggufmodel::build(llama, 12, 601, 14).gguf);  // Q4_K, Q6_K embedding
  modeltest::Spec tied = llama;
  tied.tied = true;
  save("mix_q8_0_tied", ggufmodel::build(tied, 8, 602).gguf);
  save("mix_q4_0", ggufmodel::build(llama, 2, 603).gguf);
  save("mix_qwen2_q8_0", ggufmodel::build(ggufmodel::tinySpec("qwen2"), 8, 604).gguf);
  save("mix_f16", ggufmodel::build(llama, 1, 605).gguf);
  save("mix_bf16", ggufmodel::build(llama, 30, 606).gguf);
  struct Tok {
    const char* name;
    const char* file;
    const char* model;
    const char* pre;
  };
  for (const Tok& t : {Tok{"tok_spm", "metaspace_legacy", "llama", ""}, Tok{"tok_gpt2", "bytelevel_gpt2", "gpt2", "gpt-2"},
                       Tok{"tok_qwen2", "bytelevel_qwen2", "gpt2", "qwen2"}}) {
    const ggufmodel::TokenizerKeys keys = keysFrom(tokenizers / (std::string(t.file) + ".tokenizer.json"), t.model, t.pre);
    modeltest::Spec s = llama;
    s.hidden = 64;
    s.inner = 64;
    s.vocab = static_cast<int>(keys.tokens.size());
    save(t.name, ggufmodel::build(s, 0, 700, -1, false, &keys).gguf);
  }
  return out;
}

}  // namespace ggufgolden
