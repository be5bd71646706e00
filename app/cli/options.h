// Command-line options, each declared once (issue 17): its spelling, its value, its help
// text, the words it accepts and what it does with its value live in one Option. A command
// is a list of them; its --help, its parsing and (for `screenshot`) the window's launch plan
// all come from that list. This is the declarative table of llama.cpp's common/arg, kept in
// our own small form so that the parsing rules and the one-line errors of cli.h stay
// exactly as they were (a value may start with '-' but not "--"; the last of a repeated
// option wins; an unknown option names its command).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/types.h"

namespace attn::app::cli {

// One option.
struct Option {
  std::string name;   // "--frames"
  std::string value;  // the value's placeholder in the help ("N", "FILE.png"); "" = a flag
  // The help text: its first line stands next to the name, each '\n' starts a line under
  // it. "{choices}" is replaced by the accepted words joined by " | ".
  std::string help;
  std::vector<std::string> choices;  // the accepted words, when the value is one of a list
  std::string section;               // heading it is listed under ("" = "options")
  // The value used when the option is not given, as --help prints it ("(default: 8)" after
  // the help). The builders below take it from their target's value when the option is
  // declared, so the struct initializer is its one home; "" prints none.
  std::string defaultValue;
  // Checks the value (a flag gets "") and stores it; an error names the option. May be
  // empty: the command then reads the value itself (ParsedArgs::get).
  std::function<Status(const std::string& value)> apply;
};

// One command: its help text around the options, and the options.
struct Command {
  std::string name;   // "bench"; the error for an unknown option names it
  std::string usage;  // the text before the options (usage line(s), description)
  std::string notes;  // the text after them
  std::vector<Option> options;
  int column = 0;  // where each option's help starts in --help (0 = after the longest name)
  // Sections print in the order their first option appears; "" is "options:".
};

// What the command line held, after every given option's `apply` ran.
struct ParsedArgs {
  std::string command;  // the command's name (Command::name), for messages
  std::vector<std::string> positional;
  std::map<std::string, std::string, std::less<>> values;  // last one wins; "" for a flag
  bool help = false;

  bool has(std::string_view name) const { return values.find(name) != values.end(); }
  const std::string* get(std::string_view name) const {
    auto it = values.find(name);
    return it == values.end() ? nullptr : &it->second;
  }
};

// Reads `args` (the arguments after the command's name) against `command`: "--name value",
// "--name=value", flags, "-h"/"--help" and "--" (end of options). A value may start with
// '-' ("--vmin -1") but not with "--", which is taken as a forgotten value. Errors: an
// unknown option (naming the command), a flag given a value, a missing value. Then, unless
// --help was given, runs each given option's `apply` with its last value, in the order the
// options are declared; the first error stops it.
Expected<ParsedArgs> parseCommand(const Command& command, std::span<const std::string> args);

// The command's --help: usage, then the options by section (each "  --name VALUE  help"),
// "-h, --help", then the notes.
std::string helpText(const Command& command);

// What a man page or a completion script needs of an option (issue 23), with no handler.
struct OptionInfo {
  std::string name, value, help, section;
  std::vector<std::string> choices;
};
struct CommandInfo {
  std::string name;
  std::string summary;  // the first line of its usage
  std::vector<OptionInfo> options;
};
CommandInfo describe(const Command& command);

// ---------------------------------------------------------------------------------------
// The one strict number parser (std::from_chars on the whole text; no spaces, no '+', no
// trailing characters, no "0x").
// ---------------------------------------------------------------------------------------

// A decimal integer in [lo, hi], else nullopt ("3x", "", "1.0", "0x10", out of range).
std::optional<long long> parseIntegerStrict(std::string_view text, long long lo, long long hi);
// A decimal unsigned 64-bit integer, else nullopt.
std::optional<std::uint64_t> parseUnsignedStrict(std::string_view text);

// ---------------------------------------------------------------------------------------
// Option builders. Each returns an Option whose `apply` stores into `target` (which must
// outlive the parse) and whose error is the usual "option '--NAME': 'VALUE' is not ...".
// ---------------------------------------------------------------------------------------

// A flag: sets `target` to true.
Option flagOption(std::string name, std::string help, bool& target);
// The builders of a valued option print `target`'s value when declared as its default
// (Option::defaultValue); a flag prints none.

// An integer in [lo, hi]: "'x' is not an integer in lo..hi".
Option intOption(std::string name, std::string value, long long lo, long long hi,
                 std::string help, int& target);
Option int64Option(std::string name, std::string value, long long lo, long long hi,
                   std::string help, long long& target);
// Any text (may be empty); a non-empty initial value is printed as the default.
Option textOption(std::string name, std::string value, std::string help, std::string& target);
// One of `words` (its index into `words` goes to `target`): "unknown NOUN 'x'; use one of
// a, b, c".
Option wordOption(std::string name, std::string value, std::string noun,
                  std::vector<std::string> words, std::string help, int& target);
// An option with its own check and store. It prints no default unless given one with
// withDefault.
Option customOption(std::string name, std::string value, std::string help,
                    std::function<Status(const std::string&)> apply,
                    std::vector<std::string> choices = {});

// `option` with its default printed as `value` (format a number with formatDefault), or with
// none ("": a target whose initial value means "not given", such as 0 for an optional count).
Option withDefault(Option option, std::string value);
// A number as --help prints a default: the shortest text that reads back as `value`
// (0.01, 60, 1e-05).
std::string formatDefault(double value);
std::string formatDefault(float value);

// --seed S: an integer in 0..2^64-1, the one seed rule of every command.
Option seedOption(std::string help, std::uint64_t& target);

// One of an enum's values, listed by a table the code uses (kAllColormaps ...): choices are
// their toString() names, the error "unknown NOUN 'x'; use one of a, b, c".
template <class Enum>
Option enumOption(std::string name, std::string value, std::string noun,
                  std::span<const Enum> all, std::string help, Enum& target,
                  bool* given = nullptr) {
  std::vector<std::string> words;
  for (Enum e : all) words.emplace_back(toString(e));
  std::vector<Enum> kinds(all.begin(), all.end());
  Option option = customOption(
      std::move(name), std::move(value), std::move(help),
      [kinds, words, noun, &target, given](const std::string& v) -> Status {
        for (std::size_t i = 0; i < words.size(); ++i) {
          if (words[i] == v) {
            target = kinds[i];
            if (given) *given = true;
            return Ok{};
          }
        }
        std::string list;
        for (const std::string& w : words) list += (list.empty() ? "" : ", ") + w;
        return Error{"", "", "unknown " + noun + " '" + v + "'; use one of " + list};
      },
      words);
  option.defaultValue = toString(target);
  return option;
}

// `options`, listed under `heading` in the help ("task" prints "task:").
std::vector<Option> section(const std::string& heading, std::vector<Option> options);

// "'text'": how errors quote a value.
std::string inQuotes(std::string_view text);

// The accepted words joined by `separator`.
std::string joinWords(const std::vector<std::string>& words, std::string_view separator);

}  // namespace attn::app::cli
