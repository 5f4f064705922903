// Finding the rank program before anything starts, so a typo is one clear usage error instead of N failing ranks.
#pragma once

#include <optional>
#include <string>

namespace tern::run {

// Resolves program the way execvp would: a name containing '/' is used as is, otherwise each directory of
// path_env is searched (an empty entry means the current directory). Returns the path of an executable regular
// file, or nullopt.
std::optional<std::string> ResolveProgram(const std::string& program, const std::string& path_env);

}  // namespace tern::run
