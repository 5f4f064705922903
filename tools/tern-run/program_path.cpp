#include "program_path.hpp"

#include <sys/stat.h>
#include <unistd.h>

namespace tern::run {
namespace {

bool IsExecutableFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

}  // namespace

std::optional<std::string> ResolveProgram(const std::string& program, const std::string& path_env) {
  if (program.empty()) return std::nullopt;
  if (program.find('/') != std::string::npos) {
    return IsExecutableFile(program) ? std::optional<std::string>(program) : std::nullopt;
  }
  size_t start = 0;
  while (true) {
    size_t end = path_env.find(':', start);
    std::string dir = path_env.substr(start, end == std::string::npos ? std::string::npos : end - start);
    std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + program;
    if (IsExecutableFile(candidate)) return candidate;
    if (end == std::string::npos) return std::nullopt;
    start = end + 1;
  }
}

}  // namespace tern::run
