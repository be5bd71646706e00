// libFuzzer target for the GGUF reader and the GGUF model loader. Build with clang and
// -DATTNSCOPE_FUZZ=ON, then e.g.
//   mkdir -p corpus_gguf && ./fuzz_gguf corpus_gguf -max_total_time=120 -max_len=65536
//
// Properties checked for every input:
//   1 parseGguf never crashes, and an error is one line starting with the file name;
//   2 an accepted file is consistent: every tensor's bytes lie inside the input and after the
//     data offset, at a multiple of the alignment, as many as its dims and type imply; every
//     metadata value can be read (ASan checks the bounds of strings and array items);
//   3 the model loader (config, tokenizer, weights) either refuses it with one line naming
//     the file, or (for small models) gives weights whose forward pass over two token ids
//     runs, every finite attention row summing to 1 (ASan checks every block read).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/models/quant.h"
#include "core/models/transformer.h"
#include "formats/gguf.h"
#include "formats/models/gguf_model.h"
#include "formats/tokenizers/gguf_tokenizer.h"

namespace {

[[noreturn]] void die(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_gguf: %s\n%s\n", what, detail.c_str());
  std::abort();
}

const char* const kName = "fuzz.gguf";

void checkError(const attn::Error& e) {
  const std::string m = e.message();
  if (m.rfind(kName, 0) != 0) die("error does not start with the file name", m);
  if (m.find('\n') != std::string::npos) die("error is not one line", m);
}

// Touches every byte a value points to (ASan checks the bounds).
unsigned touch(const attn::io::GgufValue& v) {
  unsigned sum = 0;
  for (char c : v.string) sum += static_cast<unsigned char>(c);
  for (std::string_view s : v.strings)
    for (char c : s) sum += static_cast<unsigned char>(c);
  if (v.raw)
    for (std::uint64_t i = 0; i < v.count; ++i) sum += static_cast<unsigned>(v.integerAt(i)) + static_cast<unsigned>(v.realAt(i) != 0);
  for (const attn::io::GgufValue& item : v.arrays) sum += touch(item);
  return sum;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  // 1
  attn::Expected<attn::io::GgufFile> parsed = attn::io::parseGguf(bytes, kName);
  if (!parsed) {
    checkError(parsed.error());
    return 0;
  }
  // 2
  auto file = std::make_shared<const attn::io::GgufFile>(std::move(parsed).value());
  volatile unsigned sink = 0;
  for (const attn::io::GgufKeyValue& kv : file->metadata()) sink = sink + touch(kv.value);
  if (file->dataOffset() % file->alignment() != 0) die("data offset not aligned", "");
  for (const attn::io::GgufTensorInfo& t : file->tensors()) {
    const attn::model::GgmlTypeInfo* type = attn::model::ggmlTypeInfo(t.type);
    if (!type) die("tensor of an unknown type accepted", t.name);
    if (t.offset < file->dataOffset() || t.offset + t.bytes > size || (t.offset - file->dataOffset()) % file->alignment() != 0)
      die("tensor bytes outside the data section", t.name);
    if (t.bytes != attn::model::ggmlBytes(*type, t.elementCount())) die("tensor bytes do not match its dims", t.name);
    const std::span<const std::byte> b = file->bytes(t);
    if (!b.empty()) sink = sink + static_cast<unsigned>(b.front()) + static_cast<unsigned>(b.back());
  }
  // 3
  attn::Expected<std::shared_ptr<const attn::io::Tokenizer>> tokenizer = attn::io::loadGgufTokenizer(*file);
  if (!tokenizer) checkError(tokenizer.error());
  else if (*tokenizer) sink = sink + static_cast<unsigned>((*tokenizer)->encode("Hi <s> 123 é").ids.size());
  attn::Expected<attn::model::Config> config = attn::io::ggufConfig(*file);
  if (!config) {
    checkError(config.error());
    return 0;
  }
  // keep runs short: only small models go through the forward pass
  if (static_cast<double>(config->nLayer) * config->nEmbd * config->nInner > 1e7 || config->vocabSize > 4096) return 0;
  attn::Expected<attn::model::Weights> weights = attn::io::ggufWeights(file, *config);
  if (!weights) {
    checkError(weights.error());
    return 0;
  }
  auto shared = std::make_shared<const attn::model::Weights>(std::move(weights).value());
  const std::vector<int> ids = {0, config->vocabSize - 1};
  attn::Expected<attn::model::DecoderRun> session = attn::model::forward(shared, ids);
  if (!session) die("forward pass failed on loaded weights", session.error().message());
  for (int l = 0; l < config->nLayer; ++l)
    for (int h = 0; h < config->nHead; ++h) {
      const attn::Matrix a = session->attention(l, h);
      for (int i = 0; i < a.rows(); ++i) {
        const double sum = a.row(i).sum();
        // weights of huge (finite) scales can overflow float32 in the products: such a row
        // is not finite; a finite row is a distribution
        if (std::isfinite(sum) && !(std::fabs(sum - 1.0) < 1e-3)) die("attention row does not sum to 1", std::to_string(sum));
      }
    }
  return 0;
}
