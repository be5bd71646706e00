// The file dialogs' logic, without ImGui: the desktop's own dialog through zenity or
// kdialog (run on a thread so the window keeps drawing), and for the built-in fallback
// dialog the folder listing (read afresh each time) and the type filters. files.cpp draws
// the fallback and hands the native dialog's answer to the usual open / save code.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace attn::app {

// ---------------------------------------------------------------------------------------
// Types of files
// ---------------------------------------------------------------------------------------

// What a dialog lists. Openable = everything File ▸ Open accepts; Folders = folders only (a
// folder chooser: no file passes).
enum class FileFilter { Openable, Scenario, Attention, Image, All, Folders, Lesson };
inline constexpr FileFilter kAllFileFilters[] = {FileFilter::Openable, FileFilter::Scenario,
                                                 FileFilter::Attention, FileFilter::Image,
                                                 FileFilter::All};
// "All openable (.json, .npy, .npz, images, .gguf)", "Scenarios (.json)", ...
const char* filterLabel(FileFilter filter);
// The shell patterns of a filter, e.g. {"*.json"}; empty for All.
std::vector<std::string> filterPatterns(FileFilter filter);
// True when the file `name` passes `filter` (extension, any case).
bool matchesFilter(const std::string& name, FileFilter filter);

// ---------------------------------------------------------------------------------------
// The fallback's listing
// ---------------------------------------------------------------------------------------

struct FolderEntry {
  std::string name;
  bool directory = false;
};
// The sub-folders and the files passing `filter` in `folder`, read now (never cached):
// folders first, then by name; hidden entries (".name") left out. Empty when the folder
// cannot be read.
std::vector<FolderEntry> listFolder(const std::string& folder, FileFilter filter);

// ---------------------------------------------------------------------------------------
// The desktop's dialog (zenity, kdialog)
// ---------------------------------------------------------------------------------------

// Open: an existing file; Save: a file name (may exist); Folder: an existing folder.
enum class NativeMode { Open, Save, Folder };

struct NativeRequest {
  NativeMode mode = NativeMode::Open;
  std::string title;         // window title
  std::string start;         // a folder (ending in '/') or a file path to start at
  std::vector<FileFilter> filters;  // offered in this order (the first is selected)
};

// The command line that shows the dialog: zenity when `zenity` is on `path` (a PATH-like
// list of folders), else kdialog, else nullopt. zenity's Save asks itself before
// overwriting (--confirm-overwrite); kdialog's getsavefilename does too. Folder picks a
// folder (zenity --directory, kdialog --getexistingdirectory) and offers no filters.
// Setting ATTNSCOPE_FILE_DIALOG=builtin in the environment turns the desktop's dialog off.
std::optional<std::vector<std::string>> nativeDialogCommand(const NativeRequest& request,
                                                            const std::string& path);

// The answer of a native dialog.
struct NativeResult {
  enum class Kind { Chosen, Cancelled, Failed };
  Kind kind = Kind::Cancelled;
  std::string path;   // Chosen: the file
  std::string error;  // Failed: why (the dialog could not run); the caller falls back
};

// Turns a dialog program's exit status and standard output into a result: exit 0 with a
// path = Chosen (the trailing newline removed), exit 1 = Cancelled, anything else (or a
// program that could not be started, `started` false) = Failed.
NativeResult interpretDialogExit(bool started, int exitCode, const std::string& output,
                                 const std::string& program);

// One dialog running on its own thread. Construct with the command; poll() each frame.
class NativeDialogRun {
 public:
  explicit NativeDialogRun(std::vector<std::string> command);
  ~NativeDialogRun();  // does not wait: a dialog still open finishes on its own thread
  NativeDialogRun(const NativeDialogRun&) = delete;
  NativeDialogRun& operator=(const NativeDialogRun&) = delete;
  // The result once the dialog has closed, else nullopt. Returns it once.
  std::optional<NativeResult> poll();

 private:
  struct Shared;
  std::shared_ptr<Shared> shared_;
};

}  // namespace attn::app
