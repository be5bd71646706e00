// Options declared once (see options.h): the one tokenizer, the help layout, the builders.
#include "app/cli/options.h"

#include <algorithm>
#include <charconv>
#include <set>

namespace attn::app::cli {
namespace {

Error optionProblem(std::string_view name, const std::string& problem) {
  return Error{"", "", "option '" + std::string(name) + "': " + problem};
}

// A handler's error without a file or field is about its option: "option '--NAME': ...",
// unless it already names an option (a check across two of them).
Error aboutOption(std::string_view name, Error error) {
  if (!error.file.empty() || !error.field.empty() || error.problem.starts_with("option '"))
    return error;
  return optionProblem(name, error.problem);
}

// "{choices}" in a help text becomes "a | b | c", in a value placeholder "a|b|c".
std::string replaceChoices(std::string text, const std::vector<std::string>& choices,
                           std::string_view separator = " | ") {
  const std::string key = "{choices}";
  if (auto at = text.find(key); at != std::string::npos)
    text.replace(at, key.size(), joinWords(choices, separator));
  return text;
}

std::string optionLabel(const Option& option) {
  return option.value.empty()
             ? option.name
             : option.name + " " + replaceChoices(option.value, option.choices, "|");
}

}  // namespace

std::string inQuotes(std::string_view text) {
  // Appended, not "'" + std::string(text) + "'", which GCC 12 at -O3 warns about
  // (a false -Wrestrict in char_traits).
  std::string out;
  out.reserve(text.size() + 2);
  out += '\'';
  out += text;
  out += '\'';
  return out;
}

std::string joinWords(const std::vector<std::string>& words, std::string_view separator) {
  std::string text;
  for (const std::string& word : words) {
    if (!text.empty()) text += separator;
    text += word;
  }
  return text;
}

Expected<ParsedArgs> parseCommand(const Command& command, std::span<const std::string> args) {
  ParsedArgs parsed;
  parsed.command = command.name;
  bool optionsEnded = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (optionsEnded || arg.empty() || arg[0] != '-' || arg == "-") {
      parsed.positional.push_back(arg);
      continue;
    }
    if (arg == "--") {
      optionsEnded = true;
      continue;
    }
    if (arg == "-h" || arg == "--help") {
      parsed.help = true;
      continue;
    }
    std::string_view name = arg;
    std::optional<std::string> inlineValue;
    if (auto eq = name.find('='); eq != std::string_view::npos) {
      inlineValue = std::string(name.substr(eq + 1));
      name = name.substr(0, eq);
    }
    auto option = std::find_if(command.options.begin(), command.options.end(),
                               [&](const Option& o) { return o.name == name; });
    if (option == command.options.end()) {
      return Error{"", "",
                   "unknown option " + inQuotes(name) + " for '" + command.name +
                       "' (see attnscope " + command.name + " --help)"};
    }
    if (option->value.empty()) {
      if (inlineValue) return optionProblem(name, "takes no value");
      parsed.values[std::string(name)] = "";
      continue;
    }
    if (inlineValue) {
      parsed.values[std::string(name)] = *inlineValue;
      continue;
    }
    if (i + 1 >= args.size() || args[i + 1].starts_with("--")) {
      return optionProblem(name, "needs a value");
    }
    parsed.values[std::string(name)] = args[++i];
  }
  if (parsed.help) return parsed;
  for (const Option& option : command.options) {
    const std::string* value = parsed.get(option.name);
    if (!value || !option.apply) continue;
    if (Status applied = option.apply(*value); !applied)
      return aboutOption(option.name, applied.error());
  }
  return parsed;
}

// The option's help with {choices} filled in and "(default: X)" after its last line (on a
// line of its own when that line is already long).
static std::string helpWithDefault(const Option& option) {
  std::string help = replaceChoices(option.help, option.choices);
  if (option.defaultValue.empty()) return help;
  const std::string note = "(default: " + option.defaultValue + ")";
  const std::size_t lastLine = help.size() - (help.rfind('\n') == std::string::npos
                                                  ? 0
                                                  : help.rfind('\n') + 1);
  while (!help.empty() && help.back() == ' ') help.pop_back();
  constexpr std::size_t kWidth = 62;  // of a help line, past the option column
  help += lastLine + 2 + note.size() > kWidth ? "\n" + note : "  " + note;
  return help;
}

std::string helpText(const Command& command) {
  std::size_t column = static_cast<std::size_t>(command.column);
  if (column == 0) {
    std::size_t widest = std::string("-h, --help").size();
    for (const Option& option : command.options)
      widest = std::max(widest, optionLabel(option).size());
    column = 2 + widest + 2;
  }
  // Sections in the order their first option appears.
  std::vector<std::string> sections;
  for (const Option& option : command.options) {
    if (std::find(sections.begin(), sections.end(), option.section) == sections.end())
      sections.push_back(option.section);
  }
  if (std::find(sections.begin(), sections.end(), "") == sections.end()) sections.push_back("");
  std::string text = command.usage;
  auto line = [&](const std::string& label, const std::string& help) {
    std::string head = "  " + label;
    head += head.size() + 1 < column ? std::string(column - head.size(), ' ') : "  ";
    std::size_t start = 0;
    bool first = true;
    while (start <= help.size()) {
      const std::size_t end = std::min(help.find('\n', start), help.size());
      const std::string part = help.substr(start, end - start);
      text += (first ? head : std::string(column, ' ')) + part;
      // No trailing spaces on a line with an empty help.
      while (!text.empty() && text.back() == ' ') text.pop_back();
      text += '\n';
      first = false;
      start = end + 1;
    }
  };
  for (const std::string& section : sections) {
    text += "\n" + (section.empty() ? std::string("options") : section) + ":\n";
    for (const Option& option : command.options) {
      if (option.section == section) line(optionLabel(option), helpWithDefault(option));
    }
    if (section.empty()) line("-h, --help", "show this help");
  }
  if (!command.notes.empty()) text += "\n" + command.notes;
  return text;
}

CommandInfo describe(const Command& command) {
  CommandInfo info;
  info.name = command.name;
  info.summary = command.usage.substr(0, command.usage.find('\n'));
  for (const Option& option : command.options) {
    info.options.push_back({option.name, replaceChoices(option.value, option.choices, "|"),
                            helpWithDefault(option), option.section,
                            option.choices});
  }
  return info;
}

std::optional<long long> parseIntegerStrict(std::string_view text, long long lo, long long hi) {
  long long value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || value < lo || value > hi)
    return std::nullopt;
  return value;
}

std::optional<std::uint64_t> parseUnsignedStrict(std::string_view text) {
  std::uint64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

// The default --help prints for an integer option: its initial value, unless that lies
// outside [lo, hi] (a "not given" marker such as 0 for a count of 1..N).
static std::string inRangeDefault(long long value, long long lo, long long hi) {
  return value >= lo && value <= hi ? std::to_string(value) : std::string();
}

Option flagOption(std::string name, std::string help, bool& target) {
  return customOption(std::move(name), "", std::move(help), [&target](const std::string&) {
    target = true;
    return Status(Ok{});
  });
}

Option int64Option(std::string name, std::string value, long long lo, long long hi,
                   std::string help, long long& target) {
  return withDefault(customOption(std::move(name), std::move(value), std::move(help),
                      [lo, hi, &target](const std::string& v) -> Status {
                        auto n = parseIntegerStrict(v, lo, hi);
                        if (!n) {
                          return Error{"", "",
                                       inQuotes(v) + " is not an integer in " + std::to_string(lo) +
                                           ".." + std::to_string(hi)};
                        }
                        target = *n;
                        return Ok{};
                      }),
                     inRangeDefault(target, lo, hi));
}

Option intOption(std::string name, std::string value, long long lo, long long hi,
                 std::string help, int& target) {
  return withDefault(customOption(std::move(name), std::move(value), std::move(help),
                      [lo, hi, &target](const std::string& v) -> Status {
                        auto n = parseIntegerStrict(v, lo, hi);
                        if (!n) {
                          return Error{"", "",
                                       inQuotes(v) + " is not an integer in " + std::to_string(lo) +
                                           ".." + std::to_string(hi)};
                        }
                        target = static_cast<int>(*n);
                        return Ok{};
                      }),
                     inRangeDefault(target, lo, hi));
}

Option textOption(std::string name, std::string value, std::string help, std::string& target) {
  return withDefault(customOption(std::move(name), std::move(value), std::move(help),
                                  [&target](const std::string& v) {
                                    target = v;
                                    return Status(Ok{});
                                  }),
                     target);
}

Option wordOption(std::string name, std::string value, std::string noun,
                  std::vector<std::string> words, std::string help, int& target) {
  std::vector<std::string> choices = words;
  const std::string initial =
      target >= 0 && target < static_cast<int>(words.size()) ? words[target] : std::string();
  return withDefault(customOption(
      std::move(name), std::move(value), std::move(help),
      [words = std::move(words), noun = std::move(noun), &target](const std::string& v) -> Status {
        auto it = std::find(words.begin(), words.end(), v);
        if (it == words.end())
          return Error{"", "", "unknown " + noun + " " + inQuotes(v) + "; use one of " +
                                   joinWords(words, ", ")};
        target = static_cast<int>(it - words.begin());
        return Ok{};
      },
      std::move(choices)), initial);
}

Option withDefault(Option option, std::string value) {
  option.defaultValue = std::move(value);
  return option;
}

std::string formatDefault(double value) {
  char buffer[32];
  const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
  return ec == std::errc() ? std::string(buffer, end) : std::string();
}

std::string formatDefault(float value) {
  char buffer[32];
  const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
  return ec == std::errc() ? std::string(buffer, end) : std::string();
}

Option seedOption(std::string help, std::uint64_t& target) {
  return withDefault(customOption("--seed", "S", std::move(help),
                                  [&target](const std::string& v) -> Status {
                                    const auto seed = parseUnsignedStrict(v);
                                    if (!seed)
                                      return Error{"", "",
                                                   inQuotes(v) + " is not an integer in 0..2^64-1"};
                                    target = *seed;
                                    return Ok{};
                                  }),
                     std::to_string(target));
}

std::vector<Option> section(const std::string& heading, std::vector<Option> options) {
  for (Option& option : options) option.section = heading;
  return options;
}

Option customOption(std::string name, std::string value, std::string help,
                    std::function<Status(const std::string&)> apply,
                    std::vector<std::string> choices) {
  Option option;
  option.name = std::move(name);
  option.value = std::move(value);
  option.help = std::move(help);
  option.choices = std::move(choices);
  option.apply = std::move(apply);
  return option;
}

}  // namespace attn::app::cli
