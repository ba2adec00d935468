// `vramtrace roles FILE [--at MOMENT]`: a PyTorch process's live blocks at a moment by role
// (analysis/roles/block_roles.h), as text or JSON.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analysis/roles/block_roles.h"

namespace vramtrace::cli {

void register_roles_command(CLI::App& app, int* exit_status);

// The JSON document of docs/cli.md.
nlohmann::ordered_json roles_json(const std::string& trace_path, const std::string& moment,
                                  const std::vector<analysis::ProcessRoles>& report);
std::string roles_text(const std::string& trace_path, const std::string& moment,
                       const std::vector<analysis::ProcessRoles>& report);

}  // namespace vramtrace::cli
