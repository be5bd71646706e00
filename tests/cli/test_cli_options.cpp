// The options declared once (app/cli/options.h): every command's --help lists every option
// it accepts and every word those options accept, the parser accepts every declared option,
// and the one tokenizer keeps the rules of cli.h (last wins, "--" ends the options, a value
// may start with '-' but not "--").
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "app/cli/cli.h"
#include "app/cli/options.h"
#include "core/scenario/view_options.h"
#include "tests/support/cli_in_process.h"

namespace test_cli_options {
namespace {

using attn::app::cli::CommandInfo;
using attn::app::cli::OptionInfo;

using attn::testing::CliRun;
constexpr auto& run = attn::testing::runCliInProcess;  // (tests/support/cli_in_process.h)

TEST(CliOptions, DeclarationsCoverEveryCommand) {
  std::set<std::string> names;
  for (const CommandInfo& info : attn::app::commandDeclarations()) {
    names.insert(info.name);
    EXPECT_TRUE(!info.options.empty() || info.name == "serve") << info.name;  // serve reads stdin only
    EXPECT_TRUE(info.summary.starts_with("usage: attnscope ")) << info.name << ": " << info.summary;
    for (const OptionInfo& option : info.options) {
      EXPECT_TRUE(option.name.starts_with("--")) << info.name << " " << option.name;
      EXPECT_FALSE(option.help.empty()) << info.name << " " << option.name;
      EXPECT_EQ(option.help.find("{choices}"), std::string::npos) << option.name;
    }
  }
  EXPECT_EQ(names, (std::set<std::string>{"open", "compute", "export", "screenshot", "lesson", "info", "image",
                                          "train", "model", "analyze", "patch", "lens", "heads",
                                          "merge", "bench", "serve", "--model"}));
}

// For each command: its --help lists each declared option and each accepted word, and
// every "  --name" line of the help is a declared option.
TEST(CliOptions, EveryHelpListsEveryOptionItAccepts) {
  for (const CommandInfo& info : attn::app::commandDeclarations()) {
    const CliRun help = run({info.name, "--help"});
    ASSERT_EQ(help.code, 0) << info.name << ": " << help.err;
    EXPECT_EQ(help.err, "");
    if (info.name != "--model") {
      EXPECT_EQ(run({"help", info.name}).out, help.out) << info.name;
    }
    std::set<std::string> declared;
    for (const OptionInfo& option : info.options) {
      declared.insert(option.name);
      EXPECT_NE(help.out.find("  " + option.name + (option.value.empty() ? "" : " ")),
                std::string::npos)
          << info.name << " --help does not list " << option.name;
      for (const std::string& choice : option.choices)
        EXPECT_NE(help.out.find(choice), std::string::npos)
            << info.name << " " << option.name << " does not list " << choice;
    }
    std::istringstream lines(help.out);
    for (std::string line; std::getline(lines, line);) {
      if (!line.starts_with("  --")) continue;
      const std::string name = line.substr(2, line.find_first_of(" =", 2) - 2);
      EXPECT_TRUE(declared.count(name)) << info.name << " --help lists undeclared " << name;
    }
    EXPECT_NE(help.out.find("-h, --help"), std::string::npos) << info.name;
  }
}

// The parser takes each declared option (a value option as --name=VALUE): with --help the
// values are not checked, so only an unknown option could fail.
TEST(CliOptions, ParserAcceptsEveryDeclaredOption) {
  for (const CommandInfo& info : attn::app::commandDeclarations()) {
    for (const OptionInfo& option : info.options) {
      const std::string arg = option.value.empty() ? option.name : option.name + "=x";
      const CliRun r = run({info.name, arg, "--help"});
      EXPECT_EQ(r.code, 0) << info.name << " " << arg << ": " << r.err;
    }
    const CliRun unknown = run({info.name, "--no-such-option", "--help"});
    EXPECT_EQ(unknown.code, 2) << info.name;
    EXPECT_EQ(unknown.err, "attnscope: unknown option '--no-such-option' for '" + info.name +
                               "' (see attnscope " + info.name + " --help)\n");
  }
}

// The choice lists come from the enum tables the code uses (kAllColormaps ...).
TEST(CliOptions, ChoicesComeFromTheEnumTables) {
  const CliRun image = run({"image", "--help"});
  for (const char* colormap :
       {"viridis", "magma", "cividis", "greys", "purples", "oranges", "blues", "rdbu"})
    EXPECT_NE(image.out.find(colormap), std::string::npos) << colormap;
  EXPECT_NE(image.out.find("dot | scaled_dot | cosine | general | additive | mlp"),
            std::string::npos)
      << image.out;
  // Each map's line of the colormap table (core/scenario/view_options.h) under --colormap.
  for (const attn::ColormapInfo& map : attn::kColormaps)
    EXPECT_NE(image.out.find(std::string(map.name) + std::string(9 - map.name.size(), ' ') +
                             std::string(map.description)),
              std::string::npos)
        << map.name << "\n" << image.out;
  EXPECT_NE(image.out.find("  magma    perceptually uniform, black to pale yellow"),
            std::string::npos);
  // The workspaces of `screenshot --workspace` from their table
  // (app/session/workspace_names.h).
  const CliRun screenshotHelp = run({"screenshot", "--help"});
  EXPECT_NE(screenshotHelp.out.find("(teach, model, attention, image, training)"),
            std::string::npos)
      << screenshotHelp.out;
  // How a vision transformer is opened: in the usage, the description and the model
  // section, with the --image option the command table declares.
  EXPECT_NE(screenshotHelp.out.find("attnscope screenshot --model VIT_DIR --image PICTURE --out FILE.png"),
            std::string::npos)
      << screenshotHelp.out;
  EXPECT_NE(screenshotHelp.out.find("a vision transformer (vit, deit) runs on a\npicture instead: --model VIT_DIR --image PICTURE"),
            std::string::npos)
      << screenshotHelp.out;
  EXPECT_NE(screenshotHelp.out.find("  --image PICTURE"), std::string::npos) << screenshotHelp.out;
  const CliRun exportHelp = run({"export", "--help"});
  EXPECT_NE(exportHelp.out.find("scores | masked_scores | weights | q | k | v | context | "
                                "concat | output"),
            std::string::npos);
  const CliRun train = run({"train", "--help"});
  EXPECT_NE(train.out.find("copy | reverse | sort | shift | markers"), std::string::npos);
  EXPECT_NE(train.out.find("encdec | encoder | pool"), std::string::npos);
  for (const CommandInfo& info : attn::app::commandDeclarations()) {
    if (info.name != "image") continue;
    auto colormap = std::find_if(info.options.begin(), info.options.end(),
                                 [](const OptionInfo& o) { return o.name == "--colormap"; });
    ASSERT_NE(colormap, info.options.end());
    EXPECT_EQ(colormap->choices, (std::vector<std::string>{"viridis", "magma", "cividis", "greys",
                                                            "purples", "oranges", "blues",
                                                            "rdbu"}));
  }
}

TEST(CliOptions, OneTokenizerKeepsTheRules) {
  using namespace attn::app::cli;
  int n = 0;
  std::string text;
  bool flag = false;
  Command command;
  command.name = "demo";
  command.options = {intOption("--n", "N", -5, 5, "a number", n),
                     textOption("--text", "T", "a text", text),
                     flagOption("--flag", "a flag", flag)};
  const std::vector<std::string> args = {"a", "--n", "1", "--n=-3", "--text", "-x", "--flag",
                                         "--", "--n"};
  auto parsed = parseCommand(command, args);
  ASSERT_TRUE(parsed) << parsed.error().message();
  EXPECT_EQ(n, -3);  // the last one wins, "-3" is a value
  EXPECT_EQ(text, "-x");
  EXPECT_TRUE(flag);
  EXPECT_EQ(parsed->positional, (std::vector<std::string>{"a", "--n"}));  // after "--"

  const std::vector<std::string> forgotten = {"--text", "--flag"};
  EXPECT_EQ(parseCommand(command, forgotten).error().message(), "option '--text': needs a value");
  const std::vector<std::string> flagValue = {"--flag=1"};
  EXPECT_EQ(parseCommand(command, flagValue).error().message(), "option '--flag': takes no value");
  const std::vector<std::string> range = {"--n", "6"};
  EXPECT_EQ(parseCommand(command, range).error().message(),
            "option '--n': '6' is not an integer in -5..5");
  const std::string help = helpText(command);
  EXPECT_NE(help.find("  --n N"), std::string::npos) << help;
  EXPECT_NE(help.find("  --flag"), std::string::npos) << help;
}

TEST(CliOptions, OneStrictIntegerParser) {
  using attn::app::cli::parseIntegerStrict;
  EXPECT_EQ(parseIntegerStrict("42", 0, 100), 42);
  EXPECT_EQ(parseIntegerStrict("-7", -10, 10), -7);
  EXPECT_EQ(parseIntegerStrict("9007199254740992", 0, 1LL << 53), 1LL << 53);
  for (const char* bad : {"", " 1", "1 ", "+1", "1.0", "0x10", "3x", "101"})
    EXPECT_FALSE(parseIntegerStrict(bad, 0, 100)) << "'" << bad << "'";
  EXPECT_EQ(attn::app::cli::parseUnsignedStrict("18446744073709551615"),
            18446744073709551615ULL);
  EXPECT_FALSE(attn::app::cli::parseUnsignedStrict("-1"));
}

// The help's defaults are printed from the values the commands start from (issue 32): a
// changed initializer changes the help, and no default is typed next to its option.
TEST(CliOptions, DefaultsInTheHelpAreTheInitialValues) {
  struct Expected {
    std::vector<std::string> args;
    std::string option, defaultText;
  };
  const std::vector<Expected> cases = {
      {{"bench", "--help"}, "--n N", "(default: 512)"},
      {{"bench", "--help"}, "--seed S", "(default: 1)"},
      {{"train", "--help"}, "--lr X", "(default: 0.01)"},
      {{"train", "--help"}, "--seconds T", "(default: 60)"},
      {{"train", "--help"}, "--task NAME", "(default: reverse)"},
      {{"lesson", "--help"}, "--size WxH", "(default: 1920x1080)"},
      {{"lesson", "--help"}, "--delay SECONDS", "(default: 4)"},
      {{"screenshot", "--help"}, "--size WxH", "(default: 1600x1000)"},
      {{"image", "--help"}, "--opacity A", "(default: 0.6)"},
      {{"image", "--help"}, "--seed S", "(default: 0)"},
      {{"export", "--help"}, "--digits N", "(default: 3)"},
      {{"export", "--help"}, "--matrix NAME", "(default: weights)"},
      {{"heads", "--help"}, "--seed S", "(default: 0)"},
      {{"lens", "--help"}, "--top K", "(default: 5)"},
  };
  for (const Expected& c : cases) {
    const CliRun r = run(c.args);
    ASSERT_EQ(r.code, 0) << c.args[0] << ": " << r.err;
    const std::size_t at = r.out.find("  " + c.option);
    ASSERT_NE(at, std::string::npos) << c.args[0] << " " << c.option;
    // The default follows the option's help, before the next option's line.
    const std::size_t next = r.out.find("\n  --", at + 1);
    const std::string entry = r.out.substr(at, next - at);
    EXPECT_NE(entry.find(c.defaultText), std::string::npos) << c.args[0] << ":\n" << entry;
    EXPECT_EQ(entry.find("(default", entry.find(c.defaultText) + 1), std::string::npos)
        << c.args[0] << ": a second default:\n" << entry;
  }
  // A count whose initial value lies outside its range is "not given": no default printed.
  const CliRun heads = run({"heads", "--help"});
  const std::size_t repeat = heads.out.find("  --repeat-random N");
  ASSERT_NE(repeat, std::string::npos);
  const std::string entry = heads.out.substr(repeat, heads.out.find("\n  --", repeat + 1) - repeat);
  EXPECT_EQ(entry.find("(default"), std::string::npos) << entry;
  // 5-D attention files are never guessed, and export --help says so.
  EXPECT_NE(run({"export", "--help"}).out.find("5 dimensions are never guessed"), std::string::npos);
}

// One seed rule in every command that takes --seed: 0..2^64-1.
TEST(CliOptions, OneSeedParser) {
  for (const std::string command : {"bench", "heads", "image", "train"}) {
    const CliRun r = run({command, "--seed", "-1"});
    EXPECT_EQ(r.code, 2) << command;
    EXPECT_EQ(r.err, "attnscope: option '--seed': '-1' is not an integer in 0..2^64-1\n")
        << command;
  }
}

// The command table is the one list: the main help lists every command the dispatch runs,
// once, and never says "GPT-2" for a command every family runs.
TEST(CliOptions, MainHelpComesFromTheCommandTable) {
  const CliRun help = run({"--help"});
  ASSERT_EQ(help.code, 0);
  EXPECT_EQ(help.out.find("GPT-2"), std::string::npos) << help.out;
  const std::size_t commands = help.out.find("\ncommands:\n");
  ASSERT_NE(commands, std::string::npos);
  for (const CommandInfo& info : attn::app::commandDeclarations()) {
    if (info.name.starts_with("--")) continue;
    EXPECT_NE(help.out.find("\n  " + info.name + " ", commands), std::string::npos) << info.name;
    EXPECT_NE(help.out.find("  attnscope " + info.name + " "), std::string::npos) << info.name;
    EXPECT_TRUE(attn::app::isCliArgument(info.name)) << info.name;
    const CliRun own = run({"help", info.name});
    EXPECT_EQ(own.code, 0) << info.name << ": " << own.err;
    EXPECT_NE(own.out.find("usage: attnscope " + info.name), std::string::npos) << info.name;
  }
  const CliRun unknown = run({"bogus"});
  EXPECT_EQ(unknown.code, 2);
  EXPECT_EQ(unknown.err,
            "attnscope: unknown command 'bogus' (commands: open, compute, export, screenshot, "
            "lesson, info, image, train, model, analyze, patch, lens, heads, merge, bench, serve; "
            "see attnscope --help)\n");
}

}  // namespace
}  // namespace test_cli_options
