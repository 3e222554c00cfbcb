#include "nn/containers.h"

namespace ember::nn {

ModuleList::ModuleList(std::vector<ModulePtr> modules) {
  for (auto& m : modules) push_back(std::move(m));
}

void ModuleList::push_back(ModulePtr m) {
  add_child(std::to_string(modules_.size()), m);
  modules_.push_back(std::move(m));
}

const ModulePtr& ModuleList::operator[](size_t i) const {
  EMBER_CHECK_T(IndexError, i < modules_.size(), "ModuleList: index ", i, " is out of range for ",
                modules_.size(), " modules");
  return modules_[i];
}

ModuleDict::ModuleDict(const std::vector<std::pair<std::string, ModulePtr>>& modules) {
  for (const auto& [k, m] : modules) insert(k, m);
}

void ModuleDict::insert(const std::string& key, ModulePtr m) {
  add_child(key, m);
  for (auto& [k, v] : items_)
    if (k == key) {
      v = std::move(m);
      return;
    }
  items_.emplace_back(key, std::move(m));
}

bool ModuleDict::contains(const std::string& key) const {
  for (const auto& [k, v] : items_)
    if (k == key) return true;
  return false;
}

const ModulePtr& ModuleDict::operator[](const std::string& key) const {
  for (const auto& [k, v] : items_)
    if (k == key) return v;
  EMBER_THROW(IndexError, "ModuleDict: no module named '", key, "'");
}

std::vector<std::string> ModuleDict::keys() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : items_) out.push_back(k);
  return out;
}

}  // namespace ember::nn
