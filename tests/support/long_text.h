// A long deterministic text for the long-input tests of the session and the window
// (tests/session/test_session_long_context.cpp, tests/ui/test_ui_model_long.cpp).
#pragma once

#include <cstddef>
#include <string>

namespace attn::testing {

// `chars` bytes of lowercase words of 2-8 letters separated by spaces, from a fixed LCG
// seeded with `seed`: about one token a byte with a byte-level tokenizer.
inline std::string longText(int chars, unsigned seed) {
  std::string text;
  unsigned x = seed;
  while (static_cast<int>(text.size()) < chars) {
    x = x * 1103515245u + 12345u;
    const int len = 2 + static_cast<int>((x >> 16) % 7);
    for (int i = 0; i < len; ++i) {
      x = x * 1103515245u + 12345u;
      text.push_back(static_cast<char>('a' + (x >> 16) % 26));
    }
    text.push_back(' ');
  }
  text.resize(static_cast<std::size_t>(chars));
  return text;
}

}  // namespace attn::testing
