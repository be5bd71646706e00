// Unicode canonical normalisation (UAX #15) for the tokenizers: NFD (canonical decomposition
// and ordering) and NFC (NFD, then canonical composition), as Hugging Face's NFC / NFD
// normalizers and BertNormalizer's strip_accents apply them. Tables generated from the
// Unicode Character Database by tools/gen_unicode_tables.py (unicode_tables.inc);
// Hangul syllables are composed and decomposed algorithmically.
#pragma once

#include <string>
#include <string_view>

namespace attn::io::unicode {

// The canonical combining class of `cp` (0 for starters and unassigned code points).
int combiningClass(char32_t cp);

// NFD of valid UTF-8 text (an invalid byte is passed through as it is).
std::string nfd(std::string_view utf8);
// NFC of valid UTF-8 text (an invalid byte is passed through as it is).
std::string nfc(std::string_view utf8);

// The Unicode version of the tables ("14.0.0").
const char* tablesVersion();

}  // namespace attn::io::unicode
