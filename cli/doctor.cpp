// `ember doctor`: what this build and this machine offer, and which device Ember will use.
#include <iostream>

#include "cli/commands.h"
#include "runtime/env.h"

namespace ember::cli {

Runner add_doctor(CLI::App& app) {
  auto* cmd = app.add_subcommand("doctor", "Report the build, the GPUs, the libraries and the CPU, "
                                           "and say which device Ember will use");
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "Print the report as JSON");
  return [cmd, json]() -> int {
    if (!cmd->parsed()) return -1;
    EnvReport r = collect_env_report();
    std::cout << (*json ? env_report_json(r) + "\n" : env_report_text(r));
    return 0;  // the CPU path always works
  };
}

}  // namespace ember::cli
