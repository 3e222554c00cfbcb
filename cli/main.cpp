// The `ember` command line: doctor, demo, algos, train, run.
#include <iostream>
#include <vector>

#include "cli/commands.h"
#include "runtime/error.h"

int main(int argc, char** argv) {
  CLI::App app{"ember: a small deep-learning runtime (C++17/CUDA)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("ember ") + "0.1.0");
  // A bad option reads like an error while running: on stderr, with the same prefix. Its exit
  // status is CLI11's for the kind of parse error (non-zero); errors while running exit with 1.
  app.failure_message([](const CLI::App* a, const CLI::Error& e) {
    return "ember: error: " + CLI::FailureMessage::simple(a, e);
  });
  std::vector<ember::cli::Runner> runners;
  runners.push_back(ember::cli::add_doctor(app));
  runners.push_back(ember::cli::add_demo(app));
  runners.push_back(ember::cli::add_algos(app));
  runners.push_back(ember::cli::add_train(app));
  runners.push_back(ember::cli::add_run(app));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    for (auto& run : runners) {
      int rc = run();
      if (rc >= 0) return rc;
    }
  } catch (const ember::Error& e) {
    std::cerr << "ember: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
