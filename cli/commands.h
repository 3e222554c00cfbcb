// The subcommands of the `ember` executable. Each registers itself on the CLI11 app and runs
// when selected; each returns the process exit code.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace ember::cli {

using Runner = std::function<int()>;
// Adds `ember doctor` and returns how to run it.
Runner add_doctor(CLI::App& app);
// Adds `ember demo`.
Runner add_demo(CLI::App& app);
// Adds `ember algos`.
Runner add_algos(CLI::App& app);
// Adds `ember train`.
Runner add_train(CLI::App& app);
// Adds `ember run` (ONNX models).
Runner add_run(CLI::App& app);

}  // namespace ember::cli
