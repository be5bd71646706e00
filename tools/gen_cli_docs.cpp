// Writes attnscope's man page and bash completion from the help texts of the built binary,
// so that `--help`, the man page and the completion have one source: the help each command
// prints. CMake runs it after building attnscope (cmake/install.cmake):
//   build/gen_cli_docs BUILD/attnscope VERSION OUT_DIR
// writes OUT_DIR/attnscope.1 and OUT_DIR/attnscope.bash.
//
// What it reads:
//   `attnscope --help`: the "usage:" block (SYNOPSIS), the "commands:" block (each line
//   "  NAME  description", continuation lines indented deeper) and the rest.
//   `attnscope help NAME` for every command listed: printed whole under COMMANDS; every
//   "--option" (and "-h") that starts an indented line, or follows two spaces on such a
//   line ("  --patch P  --query R,C"), is an option of NAME for the completion.
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "formats/files.h"

namespace {

struct Command {
  std::string name, summary, help;
  std::vector<std::string> options;
};

// Runs `binary args` and returns its standard output; exits on failure (a build step).
std::string capture(const std::string& binary, const std::string& args) {
  const std::string command = "'" + binary + "' " + args + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    std::fprintf(stderr, "gen_cli_docs: cannot run %s\n", command.c_str());
    std::exit(2);
  }
  std::string out;
  char buffer[4096];
  while (std::size_t got = std::fread(buffer, 1, sizeof buffer, pipe)) out.append(buffer, got);
  const int status = pclose(pipe);
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "gen_cli_docs: '%s' failed:\n%s\n", command.c_str(), out.c_str());
    std::exit(2);
  }
  return out;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The lines of the block that starts after the line `header` and ends at the next line that
// is empty or not indented.
std::vector<std::string> block(const std::vector<std::string>& all, const std::string& header) {
  std::vector<std::string> out;
  auto it = std::find(all.begin(), all.end(), header);
  if (it == all.end()) return out;
  for (++it; it != all.end() && !it->empty() && (*it)[0] == ' '; ++it) out.push_back(*it);
  return out;
}

// Every option named by the help text (see the file comment).
std::vector<std::string> optionsOf(const std::string& help) {
  static const std::regex lineStart(R"(^\s+(-[-a-z0-9]+)(, (--[-a-z0-9]+))?)");
  static const std::regex inLine(R"(  (--[a-z][-a-z0-9]*))");
  std::set<std::string> found;
  for (const std::string& line : lines(help)) {
    std::smatch m;
    if (!std::regex_search(line, m, lineStart)) continue;
    found.insert(m[1]);
    if (m[3].matched) found.insert(m[3]);
    for (auto i = std::sregex_iterator(line.begin(), line.end(), inLine);
         i != std::sregex_iterator(); ++i) {
      found.insert((*i)[1]);
    }
  }
  return {found.begin(), found.end()};
}

// roff: a backslash is \e; a line starting with . or ' must not be read as a request.
std::string roffLine(const std::string& line) {
  std::string out;
  for (char c : line) {
    if (c == '\\')
      out += "\\e";
    else if (c == '-')
      out += "\\-";
    else
      out += c;
  }
  if (!out.empty() && (out[0] == '.' || out[0] == '\'')) out = "\\&" + out;
  return out;
}

std::string verbatim(const std::vector<std::string>& text) {
  std::string out = ".nf\n";
  for (const std::string& line : text) out += line.empty() ? ".sp\n" : roffLine(line) + "\n";
  return out + ".fi\n";
}

std::string manPage(const std::string& version, const std::vector<std::string>& mainHelp,
                    const std::vector<Command>& commands) {
  std::string title = mainHelp.empty() ? "attnscope" : mainHelp[0];
  const auto dash = title.find(" - ");
  const std::string summary = dash == std::string::npos ? title : title.substr(dash + 3);
  std::string man;
  man += ".TH ATTNSCOPE 1 \"\" \"attnscope " + version + "\" \"User Commands\"\n";
  man += ".SH NAME\nattnscope \\- " + roffLine(summary) + "\n";
  man += ".SH SYNOPSIS\n" + verbatim(block(mainHelp, "usage:"));
  man += ".SH DESCRIPTION\n";
  man += "attnscope shows how attention works: heatmaps of scores, weights and context "
         "vectors, attention files saved from models (.npy, .npz), GPT\\-2 runs, images and "
         "training. Without a command it opens the window; with one it runs headless.\n";
  man += ".SS Commands\n";
  for (const Command& c : commands) man += ".TP\n.B " + c.name + "\n" + roffLine(c.summary) + "\n";
  // What --help says after the commands (exit codes ...).
  auto after = std::find(mainHelp.begin(), mainHelp.end(), "commands:");
  if (after != mainHelp.end()) {
    while (after != mainHelp.end() && !after->empty()) ++after;
    std::vector<std::string> rest(after, mainHelp.end());
    while (!rest.empty() && rest.front().empty()) rest.erase(rest.begin());
    if (!rest.empty()) man += ".SS Exit status\n" + verbatim(rest);
  }
  man += ".SH COMMANDS\nEach section is what \\fBattnscope help\\fR \\fICOMMAND\\fR prints.\n";
  for (const Command& c : commands) man += ".SS " + c.name + "\n" + verbatim(lines(c.help));
  man += ".SH ENVIRONMENT\n.TP\n.B ATTNSCOPE_DATA_DIR\n"
         "The folder holding scenarios/ (the presets), images/ and shaders/. By default "
         "attnscope looks next to its executable: \\fI../share/attnscope\\fR for an install, "
         "the source tree's assets/ for a build folder.\n"
         ".TP\n.B XDG_STATE_HOME\nThe autosave is "
         "\\fI$XDG_STATE_HOME/attnscope/autosave.json\\fR (default "
         "\\fI~/.local/state/attnscope/autosave.json\\fR).\n";
  man += ".SH FILES\n.TP\n.I <prefix>/share/attnscope/scenarios/\nthe presets (read-only "
         "templates: Save As writes elsewhere)\n";
  man += ".SH SEE ALSO\nThe documentation in the source tree: README.md and docs/.\n";
  return man;
}

std::string completion(const std::vector<Command>& commands,
                       const std::vector<std::string>& mainOptions) {
  std::string names;
  for (const Command& c : commands) names += (names.empty() ? "" : " ") + c.name;
  std::string top = names + " help";
  for (const std::string& o : mainOptions) top += " " + o;
  std::string script =
      "# bash completion for attnscope, generated by tools/gen_cli_docs.cpp from the help\n"
      "# texts of `attnscope --help` and `attnscope help COMMAND`.\n"
      "_attnscope() {\n"
      "  local cur=\"${COMP_WORDS[COMP_CWORD]}\" opts\n"
      "  COMPREPLY=()\n"
      "  if [[ $COMP_CWORD -eq 1 ]]; then\n"
      "    if [[ $cur == -* || -z $cur ]]; then\n"
      "      COMPREPLY=($(compgen -W \"" + top + "\" -- \"$cur\"))\n"
      "    fi\n"
      "    if [[ $cur != -* ]]; then\n"
      "      COMPREPLY+=($(compgen -W \"" + names + " help\" -- \"$cur\"))\n"
      "      COMPREPLY+=($(compgen -f -X '!*.@(json|npy|npz|png|jpg|jpeg|bmp)' -- \"$cur\"))\n"
      "      COMPREPLY+=($(compgen -d -- \"$cur\"))\n"
      "    fi\n"
      "    return 0\n"
      "  fi\n"
      "  case \"${COMP_WORDS[1]}\" in\n";
  for (const Command& c : commands) {
    std::string opts;
    for (const std::string& o : c.options) opts += (opts.empty() ? "" : " ") + o;
    script += "    " + c.name + ") opts=\"" + opts + "\" ;;\n";
  }
  script += "    help) COMPREPLY=($(compgen -W \"" + names +
            "\" -- \"$cur\")); return 0 ;;\n"
            "    *) opts=\"\" ;;\n"
            "  esac\n"
            "  if [[ $cur == -* ]]; then\n"
            "    COMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"))\n"
            "  else\n"
            "    COMPREPLY=($(compgen -f -- \"$cur\"))\n"
            "  fi\n"
            "  return 0\n"
            "}\n"
            "shopt -s extglob\n"
            "complete -o filenames -F _attnscope attnscope\n";
  return script;
}

bool write(const std::string& path, const std::string& text) {
  if (attn::Status written = attn::io::writeFileAtomic(path, text); !written) {
    std::fprintf(stderr, "gen_cli_docs: %s: %s\n", path.c_str(), written.error().message().c_str());
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: gen_cli_docs ATTNSCOPE_BINARY VERSION OUT_DIR\n");
    return 2;
  }
  const std::string binary = argv[1], version = argv[2], folder = argv[3];
  const std::string mainText = capture(binary, "--help");
  const std::vector<std::string> mainHelp = lines(mainText);

  // 1 the commands and their one-line summaries ("  NAME  text", continuations deeper)
  std::vector<Command> commands;
  static const std::regex entry(R"(^  ([a-z]+)\s{2,}(.*)$)");
  for (const std::string& line : block(mainHelp, "commands:")) {
    std::smatch m;
    if (std::regex_match(line, m, entry)) {
      commands.push_back({m[1], m[2], "", {}});
    } else if (!commands.empty()) {
      commands.back().summary += " " + line.substr(line.find_first_not_of(' '));
    }
  }
  if (commands.empty()) {
    std::fprintf(stderr, "gen_cli_docs: `%s --help` lists no commands\n", binary.c_str());
    return 2;
  }
  // 2 each command's help and options
  for (Command& c : commands) {
    c.help = capture(binary, "help " + c.name);
    c.options = optionsOf(c.help);
  }
  // 3 the options of the window itself (--model, --text, --version, --help)
  std::set<std::string> top = {"--help", "--version"};
  static const std::regex usageOption(R"(^\s+attnscope (--[a-z][-a-z0-9]*)(.*)$)");
  for (const std::string& line : block(mainHelp, "usage:")) {
    std::smatch m;
    if (!std::regex_match(line, m, usageOption)) continue;
    top.insert(m[1]);
    const std::string rest = m[2];
    static const std::regex more(R"((--[a-z][-a-z0-9]*))");
    for (auto i = std::sregex_iterator(rest.begin(), rest.end(), more);
         i != std::sregex_iterator(); ++i) {
      top.insert((*i)[1]);
    }
  }
  const bool ok = write(folder + "/attnscope.1", manPage(version, mainHelp, commands)) &&
                  write(folder + "/attnscope.bash",
                        completion(commands, {top.begin(), top.end()}));
  if (ok) {
    std::printf("gen_cli_docs: %zu commands -> %s/attnscope.1, %s/attnscope.bash\n",
                commands.size(), folder.c_str(), folder.c_str());
  }
  return ok ? 0 : 2;
}
