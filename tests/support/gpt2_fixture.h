// A tiny random GPT-2 in the exact Hugging Face layout, written by the tests themselves:
// config.json, model.safetensors (the real tensor names, including h.N.attn.bias and
// h.N.attn.masked_bias), vocab.json and merges.txt (256 byte tokens in GPT-2's order, merges
// learnt here from a small corpus, <|endoftext|>). Plus an independent plain-loop reference
// forward pass in double precision that reads the named tensors directly (it shares no code
// with core/gpt2), and a string-based port of encoder.py's bpe() for the tokenizer.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/base/random.h"
#include "tests/support/test_files.h"

namespace gpt2test {

namespace fs = std::filesystem;
using nlohmann::json;

// =======================================================================================
// Files
// =======================================================================================

// tests/support/test_files.h: the one copy of these helpers.
using attn::testing::freshDir;
using attn::testing::readFile;
using attn::testing::writeFile;

// =======================================================================================
// Safetensors, written by hand (independent of formats/safetensors)
// =======================================================================================

struct RawTensor {
  std::string name;
  std::string dtype;  // "F32", "F16", "BF16", "F64", ...
  std::vector<std::int64_t> shape;
  std::string bytes;
};

// 8-byte little-endian header length, the JSON header (padded with spaces to a multiple of
// 8, as the Python writer does), the data in the given order.
inline std::string safetensorsBytes(const std::vector<RawTensor>& tensors,
                                    const json& metadata = json()) {
  json header = json::object();
  if (!metadata.is_null()) header["__metadata__"] = metadata;
  std::uint64_t offset = 0;
  std::string data;
  for (const RawTensor& t : tensors) {
    header[t.name] = {{"dtype", t.dtype},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
    data += t.bytes;
  }
  std::string text = header.dump();
  while (text.size() % 8 != 0) text += ' ';
  std::string out(8, '\0');
  std::uint64_t length = text.size();
  for (int i = 0; i < 8; ++i)
    out[static_cast<std::size_t>(i)] = static_cast<char>((length >> (8 * i)) & 0xFF);
  return out + text + data;
}

// Exact conversions for values with at most 7 significant bits (see TinyModel): the tests
// pick such values so that F32, F16 and BF16 files hold the very same numbers.
inline std::uint16_t toHalfExact(float value) {
  std::uint32_t bits = 0;
  std::memcpy(&bits, &value, 4);
  if ((bits & 0x7FFFFFFFu) == 0) return static_cast<std::uint16_t>(bits >> 16);
  const std::uint32_t sign = (bits >> 16) & 0x8000u;
  const int exponent = static_cast<int>((bits >> 23) & 0xFF) - 127 + 15;
  const std::uint32_t mantissa = bits & 0x7FFFFFu;
  if (exponent <= 0 || exponent >= 31 || (mantissa & 0x1FFFu) != 0) {
    throw std::runtime_error("toHalfExact: value not exactly representable");
  }
  return static_cast<std::uint16_t>(sign | (static_cast<std::uint32_t>(exponent) << 10) |
                                    (mantissa >> 13));
}

inline std::uint16_t toBfloat16Exact(float value) {
  std::uint32_t bits = 0;
  std::memcpy(&bits, &value, 4);
  if ((bits & 0xFFFFu) != 0) throw std::runtime_error("toBfloat16Exact: value not representable");
  return static_cast<std::uint16_t>(bits >> 16);
}

inline std::string encodeFloats(const std::vector<float>& values, const std::string& dtype) {
  std::string out;
  if (dtype == "F32") {
    out.resize(values.size() * 4);
    std::memcpy(out.data(), values.data(), out.size());
  } else if (dtype == "F64") {
    for (float v : values) {
      double d = v;
      out.append(reinterpret_cast<const char*>(&d), 8);
    }
  } else {
    for (float v : values) {
      const std::uint16_t bits = dtype == "F16" ? toHalfExact(v) : toBfloat16Exact(v);
      out += static_cast<char>(bits & 0xFF);
      out += static_cast<char>(bits >> 8);
    }
  }
  return out;
}

// =======================================================================================
// Vocabulary and merges
// =======================================================================================

// GPT-2's byte order (encoder.py's bytes_to_unicode): printable bytes first, in order, then
// the rest, mapped to U+0100 upwards. Written out here independently of core/gpt2/bpe.
inline std::vector<std::pair<int, char32_t>> byteOrder() {
  std::vector<std::pair<int, char32_t>> order;
  std::set<int> printable;
  for (int b = '!'; b <= '~'; ++b) printable.insert(b);
  for (int b = 0xA1; b <= 0xAC; ++b) printable.insert(b);
  for (int b = 0xAE; b <= 0xFF; ++b) printable.insert(b);
  for (int b : printable) order.emplace_back(b, static_cast<char32_t>(b));
  char32_t next = 256;
  for (int b = 0; b < 256; ++b)
    if (!printable.count(b)) order.emplace_back(b, next++);
  return order;
}

inline std::string utf8(char32_t cp) {
  std::string out;
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return out;
}

// Mapped form of raw bytes, e.g. " the" -> "Ġthe".
inline std::string mapped(const std::string& bytes) {
  static const std::map<int, char32_t> table = [] {
    std::map<int, char32_t> t;
    for (auto [b, cp] : byteOrder()) t[b] = cp;
    return t;
  }();
  std::string out;
  for (char c : bytes) out += utf8(table.at(static_cast<unsigned char>(c)));
  return out;
}

// Splits mapped text into its characters (UTF-8 sequences).
inline std::vector<std::string> characters(const std::string& text) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < text.size();) {
    const auto b = static_cast<unsigned char>(text[i]);
    const std::size_t len = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
    out.push_back(text.substr(i, len));
    i += len;
  }
  return out;
}

// Learns `count` merges from pre-tokens (raw bytes) with frequencies: repeatedly merge the
// most frequent adjacent pair (ties: the smaller pair as strings), as a BPE trainer does.
inline std::vector<std::pair<std::string, std::string>> learnMerges(
    const std::vector<std::pair<std::string, int>>& words, int count) {
  std::vector<std::pair<std::vector<std::string>, int>> state;
  for (const auto& [w, f] : words) state.emplace_back(characters(mapped(w)), f);
  std::vector<std::pair<std::string, std::string>> merges;
  for (int step = 0; step < count; ++step) {
    std::map<std::pair<std::string, std::string>, int> counts;
    for (const auto& [symbols, f] : state)
      for (std::size_t i = 0; i + 1 < symbols.size(); ++i)
        counts[{symbols[i], symbols[i + 1]}] += f;
    if (counts.empty()) break;
    auto best = counts.begin();
    for (auto it = counts.begin(); it != counts.end(); ++it)
      if (it->second > best->second) best = it;
    const auto pair = best->first;
    merges.push_back(pair);
    for (auto& [symbols, f] : state) {
      std::vector<std::string> next;
      for (std::size_t i = 0; i < symbols.size();) {
        if (i + 1 < symbols.size() && symbols[i] == pair.first && symbols[i + 1] == pair.second) {
          next.push_back(pair.first + pair.second);
          i += 2;
        } else {
          next.push_back(symbols[i++]);
        }
      }
      symbols = std::move(next);
    }
  }
  return merges;
}

// The test vocabulary: 256 byte tokens in GPT-2's order, one token per merge, then
// <|endoftext|>. vocab.json text and merges.txt text.
struct Vocabulary {
  std::vector<std::pair<std::string, int>> tokens;  // mapped text -> id
  std::vector<std::pair<std::string, std::string>> merges;

  int size() const { return static_cast<int>(tokens.size()); }
  std::string vocabJson() const {
    json v = json::object();
    for (const auto& [t, id] : tokens) v[t] = id;
    return v.dump();
  }
  std::string mergesText() const {
    std::string out = "#version: 0.2\n";
    for (const auto& [a, b] : merges) out += a + " " + b + "\n";
    return out;
  }
};

inline Vocabulary makeVocabulary(const std::vector<std::pair<std::string, std::string>>& merges) {
  Vocabulary v;
  for (auto [b, cp] : byteOrder()) v.tokens.emplace_back(utf8(cp), v.size());
  std::set<std::string> seen;
  for (const auto& t : v.tokens) seen.insert(t.first);
  for (const auto& [a, b] : merges) {
    if (seen.insert(a + b).second) v.tokens.emplace_back(a + b, v.size());
  }
  v.merges = merges;
  v.tokens.emplace_back("<|endoftext|>", v.size());
  return v;
}

inline const std::vector<std::pair<std::string, int>>& trainingWords() {
  static const std::vector<std::pair<std::string, int>> words = {
      {" the", 50}, {"The", 10},       {" cat", 12}, {" sat", 9},   {" on", 20}, {" mat", 7},
      {" they", 8}, {"'re", 6},        {" here", 6}, {" there", 5}, {" 123", 3}, {" dog", 4},
      {" hat", 5},  {" that", 11},     {" this", 9}, {" is", 15},   {" in", 14}, {"\n", 10},
      {" and", 16}, {" attention", 4}, {" head", 5}, {" model", 4}, {"ing", 8},  {" 2024", 2}};
  return words;
}

inline Vocabulary defaultVocabulary() {
  return makeVocabulary(learnMerges(trainingWords(), 40));
}

// A string-based port of encoder.py's bpe() (merges as string pairs, symbols as strings).
inline std::vector<int> referenceBpe(const Vocabulary& vocab, const std::string& pieceBytes) {
  std::map<std::pair<std::string, std::string>, int> ranks;
  for (std::size_t i = 0; i < vocab.merges.size(); ++i)
    ranks[vocab.merges[i]] = static_cast<int>(i);
  std::map<std::string, int> ids(vocab.tokens.begin(), vocab.tokens.end());
  std::vector<std::string> word = characters(mapped(pieceBytes));
  while (word.size() > 1) {
    int best = INT32_MAX;
    std::pair<std::string, std::string> bigram;
    for (std::size_t i = 0; i + 1 < word.size(); ++i) {
      auto it = ranks.find({word[i], word[i + 1]});
      if (it != ranks.end() && it->second < best) {
        best = it->second;
        bigram = it->first;
      }
    }
    if (best == INT32_MAX) break;
    std::vector<std::string> next;
    for (std::size_t i = 0; i < word.size();) {
      if (i + 1 < word.size() && word[i] == bigram.first && word[i + 1] == bigram.second) {
        next.push_back(bigram.first + bigram.second);
        i += 2;
      } else {
        next.push_back(word[i++]);
      }
    }
    word = std::move(next);
  }
  std::vector<int> out;
  for (const std::string& s : word) out.push_back(ids.at(s));
  return out;
}

// =======================================================================================
// The tiny model
// =======================================================================================

struct TinyConfig {
  int nLayer = 2;
  int nHead = 2;
  int nEmbd = 8;
  int nPositions = 24;
  double eps = 1e-5;
};

struct NamedTensor {
  std::vector<std::int64_t> shape;
  std::vector<float> values;
};

// Named tensors without prefix ("wte.weight", "h.0.attn.c_attn.weight", ...). Values are
// k / 2^s with |k| < 128 so that they are exact in F16 and BF16 as well.
struct TinyModel {
  TinyConfig config;
  int vocabSize = 0;
  std::map<std::string, NamedTensor> tensors;

  const NamedTensor& at(const std::string& name) const { return tensors.at(name); }
};

inline TinyModel makeTinyModel(const TinyConfig& c, int vocabSize, std::uint64_t seed) {
  TinyModel model;
  model.config = c;
  model.vocabSize = vocabSize;
  attn::SplitMix64 generator(seed);  // core/base/random.h
  auto next = [&]() { return generator.next(); };
  // k / 2^shift with k uniform in [-range, range], range < 128
  auto values = [&](std::size_t count, int range, int shift, float offset = 0) {
    std::vector<float> v(count);
    for (float& x : v) {
      const int k = static_cast<int>(next() % static_cast<std::uint64_t>(2 * range + 1)) - range;
      x = offset + std::ldexp(static_cast<float>(k), -shift);
    }
    return v;
  };
  const std::int64_t E = c.nEmbd;
  auto add = [&](const std::string& name, std::vector<std::int64_t> shape, std::vector<float> v) {
    model.tensors[name] = NamedTensor{std::move(shape), std::move(v)};
  };
  // Larger weights than GPT-2's init so that attention is far from uniform.
  add("wte.weight", {vocabSize, E}, values(static_cast<std::size_t>(vocabSize * E), 127, 7));
  add("wpe.weight", {c.nPositions, E}, values(static_cast<std::size_t>(c.nPositions * E), 127, 8));
  for (int l = 0; l < c.nLayer; ++l) {
    const std::string p = "h." + std::to_string(l) + ".";
    add(p + "ln_1.weight", {E}, values(static_cast<std::size_t>(E), 63, 7, 1.0f));
    add(p + "ln_1.bias", {E}, values(static_cast<std::size_t>(E), 100, 9));
    add(p + "attn.c_attn.weight", {E, 3 * E}, values(static_cast<std::size_t>(E * 3 * E), 127, 6));
    add(p + "attn.c_attn.bias", {3 * E}, values(static_cast<std::size_t>(3 * E), 100, 8));
    add(p + "attn.c_proj.weight", {E, E}, values(static_cast<std::size_t>(E * E), 127, 7));
    add(p + "attn.c_proj.bias", {E}, values(static_cast<std::size_t>(E), 100, 9));
    add(p + "ln_2.weight", {E}, values(static_cast<std::size_t>(E), 63, 7, 1.0f));
    add(p + "ln_2.bias", {E}, values(static_cast<std::size_t>(E), 100, 9));
    add(p + "mlp.c_fc.weight", {E, 4 * E}, values(static_cast<std::size_t>(E * 4 * E), 127, 7));
    add(p + "mlp.c_fc.bias", {4 * E}, values(static_cast<std::size_t>(4 * E), 100, 8));
    add(p + "mlp.c_proj.weight", {4 * E, E}, values(static_cast<std::size_t>(4 * E * E), 127, 8));
    add(p + "mlp.c_proj.bias", {E}, values(static_cast<std::size_t>(E), 100, 9));
  }
  add("ln_f.weight", {E}, values(static_cast<std::size_t>(E), 63, 7, 1.0f));
  add("ln_f.bias", {E}, values(static_cast<std::size_t>(E), 100, 9));
  return model;
}

// The tensors as a published checkpoint has them: optional "transformer." prefix, plus the
// unused attn.bias (causal mask buffer, [1, 1, P, P]) and attn.masked_bias (a scalar).
inline std::vector<RawTensor> checkpointTensors(const TinyModel& model, const std::string& dtype,
                                                const std::string& prefix = "") {
  std::vector<RawTensor> out;
  for (const auto& [name, t] : model.tensors) {
    out.push_back({prefix + name, dtype, t.shape, encodeFloats(t.values, dtype)});
  }
  const int P = model.config.nPositions;
  for (int l = 0; l < model.config.nLayer; ++l) {
    std::vector<float> mask(static_cast<std::size_t>(P * P));
    for (int i = 0; i < P; ++i)
      for (int j = 0; j < P; ++j) mask[static_cast<std::size_t>(i * P + j)] = j <= i ? 1.0f : 0.0f;
    out.push_back({prefix + "h." + std::to_string(l) + ".attn.bias",
                   dtype,
                   {1, 1, P, P},
                   encodeFloats(mask, dtype)});
    out.push_back({prefix + "h." + std::to_string(l) + ".attn.masked_bias",
                   "F32",
                   {},
                   encodeFloats({-1e4f}, "F32")});
  }
  return out;
}

inline json configJson(const TinyModel& model) {
  return {{"activation_function", "gelu_new"},
          {"architectures", {"GPT2LMHeadModel"}},
          {"attn_pdrop", 0.1},
          {"bos_token_id", model.vocabSize - 1},
          {"embd_pdrop", 0.1},
          {"eos_token_id", model.vocabSize - 1},
          {"initializer_range", 0.02},
          {"layer_norm_epsilon", model.config.eps},
          {"model_type", "gpt2"},
          {"n_ctx", model.config.nPositions},
          {"n_embd", model.config.nEmbd},
          {"n_head", model.config.nHead},
          {"n_inner", nullptr},
          {"n_layer", model.config.nLayer},
          {"n_positions", model.config.nPositions},
          {"resid_pdrop", 0.1},
          {"vocab_size", model.vocabSize}};
}

// Writes the whole folder. Returns its path.
inline fs::path writeModelFolder(const std::string& name, const TinyModel& model,
                                 const Vocabulary& vocab, const std::string& dtype = "F32",
                                 const std::string& prefix = "") {
  fs::path dir = freshDir(name);
  writeFile(dir / "config.json", configJson(model).dump(2));
  writeFile(dir / "vocab.json", vocab.vocabJson());
  writeFile(dir / "merges.txt", vocab.mergesText());
  writeFile(dir / "model.safetensors",
             safetensorsBytes(checkpointTensors(model, dtype, prefix), json{{"format", "pt"}}));
  return dir;
}

// =======================================================================================
// Reference forward pass: plain loops, double precision, the whole sequence at once
// =======================================================================================

struct Reference {
  // attention[l][h][i][j]
  std::vector<std::vector<std::vector<std::vector<double>>>> attention;
  // q/k/v[l][h][i][d]
  std::vector<std::vector<std::vector<std::vector<double>>>> q, k, v;
  std::vector<std::vector<double>> logits;  // [i][vocab]
};

inline Reference referenceForward(const TinyModel& model, const std::vector<int>& ids) {
  const int n = static_cast<int>(ids.size());
  const int E = model.config.nEmbd;
  const int H = model.config.nHead;
  const int D = E / H;
  const int V = model.vocabSize;
  auto W = [&](const std::string& name, int r, int c) {
    const NamedTensor& t = model.at(name);
    return static_cast<double>(t.values[static_cast<std::size_t>(r * t.shape[1] + c)]);
  };
  auto B = [&](const std::string& name, int i) {
    return static_cast<double>(model.at(name).values[static_cast<std::size_t>(i)]);
  };
  using Rows = std::vector<std::vector<double>>;
  auto layerNorm = [&](const Rows& x, const std::string& name) {
    Rows out = x;
    for (int i = 0; i < n; ++i) {
      double mean = 0;
      for (int c = 0; c < E; ++c) mean += x[i][c];
      mean /= E;
      double var = 0;
      for (int c = 0; c < E; ++c) var += (x[i][c] - mean) * (x[i][c] - mean);
      var /= E;
      for (int c = 0; c < E; ++c)
        out[i][c] = (x[i][c] - mean) / std::sqrt(var + model.config.eps) * B(name + ".weight", c) +
                    B(name + ".bias", c);
    }
    return out;
  };
  auto linear = [&](const Rows& x, const std::string& name, int in, int outWidth) {
    Rows out(static_cast<std::size_t>(n), std::vector<double>(static_cast<std::size_t>(outWidth)));
    for (int i = 0; i < n; ++i)
      for (int o = 0; o < outWidth; ++o) {
        double s = B(name + ".bias", o);
        for (int c = 0; c < in; ++c) s += x[i][c] * W(name + ".weight", c, o);
        out[i][o] = s;
      }
    return out;
  };

  Reference ref;
  Rows x(static_cast<std::size_t>(n), std::vector<double>(static_cast<std::size_t>(E)));
  for (int i = 0; i < n; ++i)
    for (int c = 0; c < E; ++c) x[i][c] = W("wte.weight", ids[i], c) + W("wpe.weight", i, c);

  for (int l = 0; l < model.config.nLayer; ++l) {
    const std::string p = "h." + std::to_string(l) + ".";
    Rows a = layerNorm(x, p + "ln_1");
    Rows qkv = linear(a, p + "attn.c_attn", E, 3 * E);
    Rows context(static_cast<std::size_t>(n),
                 std::vector<double>(static_cast<std::size_t>(E), 0.0));
    ref.attention.emplace_back();
    ref.q.emplace_back();
    ref.k.emplace_back();
    ref.v.emplace_back();
    for (int h = 0; h < H; ++h) {
      Rows q(static_cast<std::size_t>(n), std::vector<double>(static_cast<std::size_t>(D)));
      Rows k = q, v = q;
      for (int i = 0; i < n; ++i)
        for (int d = 0; d < D; ++d) {
          q[i][d] = qkv[i][h * D + d];
          k[i][d] = qkv[i][E + h * D + d];
          v[i][d] = qkv[i][2 * E + h * D + d];
        }
      Rows att(static_cast<std::size_t>(n), std::vector<double>(static_cast<std::size_t>(n), 0.0));
      for (int i = 0; i < n; ++i) {
        double maxScore = -1e300;
        for (int j = 0; j <= i; ++j) {
          double s = 0;
          for (int d = 0; d < D; ++d) s += q[i][d] * k[j][d];
          att[i][j] = s / std::sqrt(static_cast<double>(D));
          maxScore = std::max(maxScore, att[i][j]);
        }
        double sum = 0;
        for (int j = 0; j <= i; ++j) {
          att[i][j] = std::exp(att[i][j] - maxScore);
          sum += att[i][j];
        }
        for (int j = 0; j <= i; ++j) att[i][j] /= sum;
        for (int d = 0; d < D; ++d) {
          double s = 0;
          for (int j = 0; j <= i; ++j) s += att[i][j] * v[j][d];
          context[i][h * D + d] = s;
        }
      }
      ref.attention.back().push_back(att);
      ref.q.back().push_back(q);
      ref.k.back().push_back(k);
      ref.v.back().push_back(v);
    }
    Rows projected = linear(context, p + "attn.c_proj", E, E);
    for (int i = 0; i < n; ++i)
      for (int c = 0; c < E; ++c) x[i][c] += projected[i][c];
    Rows b = layerNorm(x, p + "ln_2");
    Rows hidden = linear(b, p + "mlp.c_fc", E, 4 * E);
    for (auto& row : hidden)
      for (double& z : row)
        z = 0.5 * z * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (z + 0.044715 * z * z * z)));
    Rows mlp = linear(hidden, p + "mlp.c_proj", 4 * E, E);
    for (int i = 0; i < n; ++i)
      for (int c = 0; c < E; ++c) x[i][c] += mlp[i][c];
  }
  Rows f = layerNorm(x, "ln_f");
  ref.logits.assign(static_cast<std::size_t>(n), std::vector<double>(static_cast<std::size_t>(V)));
  for (int i = 0; i < n; ++i)
    for (int t = 0; t < V; ++t) {
      double s = 0;
      for (int c = 0; c < E; ++c) s += f[i][c] * W("wte.weight", t, c);
      ref.logits[i][t] = s;
    }
  return ref;
}

}  // namespace gpt2test
