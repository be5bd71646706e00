// libFuzzer target for the GPT-2 loaders and tokenizer. Build with clang and
// -DATTNSCOPE_FUZZ=ON (see CMakeLists.txt), then e.g.
//   ./fuzz_gpt2 corpus -max_total_time=120 -max_len=4096
//
// The first input byte picks what the rest is fed to:
//   0 safetensors: open() never crashes; every F32/F16/BF16 tensor of at most 2^20 elements
//     reads (or fails) without crashing; errors are one line starting with the file name;
//   1 tokenizer: encode() of arbitrary bytes never crashes, every id is in the vocabulary,
//     decode(encode(x)) == cleanUtf8(x), and cleaning is idempotent;
//   2 config.json: parseModelConfig() never crashes; errors are one line with the file name;
//   3 tokenizer files: "VOCAB\0MERGES" through Gpt2Tokenizer::fromText(); an accepted pair
//     encodes and decodes its own text.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>

#include "core/models/gpt2/bpe.h"
#include "formats/models/model_config.h"
#include "formats/tokenizers/gpt2_tokenizer.h"
#include "formats/safetensors.h"

namespace {

[[noreturn]] void die(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_gpt2: %s\n%s\n", what, detail.c_str());
  std::abort();
}

void checkMessage(const attn::Error& error, const std::string& file) {
  const std::string message = error.message();
  if (message.find('\n') != std::string::npos || message.rfind(file + ": ", 0) != 0) {
    die("error message is not one line starting with the file name", message);
  }
}

// A small byte-level vocabulary with a few merges, built once.
const attn::io::Gpt2Tokenizer& tokenizer() {
  static const attn::io::Gpt2Tokenizer t = [] {
    std::string vocab = "{";
    const auto& table = attn::gpt2::byteToUnicode();
    int id = 0;
    auto add = [&](const std::string& token) {
      std::string escaped;
      for (char c : token) {
        if (c == '"' || c == '\\') escaped += '\\';
        escaped += c;
      }
      vocab += id == 0 ? "\"" : ",\"";
      vocab += escaped + "\":" + std::to_string(id);
      ++id;
    };
    for (int b = 0; b < 256; ++b) {
      std::string s;
      attn::gpt2::appendUtf8(s, table[static_cast<std::size_t>(b)]);
      add(s);
    }
    const std::string merges = "#version: 0.2\nĠ t\nh e\nĠt he\ni n\nĠ a\na a\n";
    for (const char* t : {"Ġt", "he", "Ġthe", "in", "Ġa", "aa"}) add(t);
    vocab += "}";
    auto made = attn::io::Gpt2Tokenizer::fromText(vocab, merges);
    if (!made) die("the fixed vocabulary does not load", made.error().message());
    return std::move(made).value();
  }();
  return t;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::uint8_t mode = data[0] % 4;
  const std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);

  if (mode == 0) {
    static const std::string path = "/tmp/fuzz_gpt2_" + std::to_string(::getpid()) + ".safetensors";
    {
      std::ofstream out(path, std::ios::binary | std::ios::trunc);
      out.write(rest.data(), static_cast<std::streamsize>(rest.size()));
    }
    auto file = attn::io::SafetensorsFile::open(path);
    if (!file) {
      checkMessage(file.error(), path);
      return 0;
    }
    for (const attn::io::TensorInfo& t : file->tensors()) {
      if (t.elementCount() > (1 << 20)) continue;
      if (file->bytes(t).size() != static_cast<std::size_t>(t.end - t.begin))
        die("bytes() size", t.name);
      if (t.shape.size() == 1) {
        auto v = file->readVector(t.name, t.shape[0]);
        if (!v) checkMessage(v.error(), path);
      } else if (t.shape.size() == 2) {
        auto m = file->readMatrix(t.name, t.shape[0], t.shape[1]);
        if (!m) checkMessage(m.error(), path);
      }
      file->releasePages(t);
    }
    return 0;
  }

  if (mode == 1) {
    const auto encoding = tokenizer().encode(rest);
    for (int id : encoding.ids) {
      if (id < 0 || id >= tokenizer().bpe().idLimit())
        die("id outside the vocabulary", std::to_string(id));
    }
    const std::string clean = attn::gpt2::cleanUtf8(rest).text;
    if (tokenizer().decode(encoding.ids) != clean) die("decode(encode(x)) != clean(x)", clean);
    const auto again = attn::gpt2::cleanUtf8(clean);
    if (again.text != clean || !again.invalidOffsets.empty())
      die("cleaning is not idempotent", clean);
    return 0;
  }

  if (mode == 2) {
    auto config = attn::io::parseModelConfig(rest, "config.json");
    if (!config) checkMessage(config.error(), "config.json");
    return 0;
  }

  const std::size_t split = rest.find('\0');
  const std::string_view vocab = rest.substr(0, split);
  const std::string_view merges =
      split == std::string_view::npos ? std::string_view() : rest.substr(split + 1);
  auto made = attn::io::Gpt2Tokenizer::fromText(vocab, merges);
  if (!made) {
    const std::string message = made.error().message();
    if (message.rfind("vocab.json: ", 0) != 0 && message.rfind("merges.txt: ", 0) != 0) {
      die("tokenizer file error does not name the file", message);
    }
    return 0;
  }
  const std::string text = "hello the world, aa in\n";
  if (made->decode(made->encode(text).ids) != text)
    die("a loaded tokenizer does not round-trip", text);
  return 0;
}
