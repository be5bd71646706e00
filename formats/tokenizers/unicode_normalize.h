// Unicode canonical normalisation (UAX #15) for the tokenizers: NFD (canonical decomposition
// and ordering) and NFC (NFD, then canonical composition), as Hugging Face's NFC / NFD
// normalizers and BertNormalizer's strip_accents apply them. The one home of Unicode data
// in attnscope is ICU (Debian libicu-dev); these wrap its Normalizer2 for UTF-8 text.
#pragma once

#include <string>
#include <string_view>

namespace attn::io::unicode {

// The canonical combining class of `cp` (0 for starters and unassigned code points).
int combiningClass(char32_t cp);

// NFD of UTF-8 text. Each invalid byte is passed through as it is (the text between invalid
// bytes is normalised on its own).
std::string nfd(std::string_view utf8);
// NFC of UTF-8 text, invalid bytes as for nfd.
std::string nfc(std::string_view utf8);

}  // namespace attn::io::unicode
