// A by-name registry of factories, one per kind of pluggable component
// (agents, cost models, graph generators, importers, ...).
//
// Components are registered by explicit calls (RegisterBuiltin...() functions
// in each module) rather than static initializers, so that the linker never
// drops them from static libraries. Create() on an unknown name throws a
// ConfigError that lists every valid name and suggests the closest one.
// Registration is not thread-safe; lookups after registration are.
#ifndef GOSIM_CORE_REGISTRY_H_
#define GOSIM_CORE_REGISTRY_H_

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/strings.h"

namespace gosim {

template <typename Product, typename... Args>
class Registry {
 public:
  using Factory = std::function<Product(Args...)>;

  // `kind` names what is registered, for messages ("agent", "cost model").
  explicit Registry(std::string kind) : kind_(std::move(kind)) {}

  // Registers `factory` under `name`; re-registering a name replaces it.
  void Register(const std::string& name, Factory factory, std::string description = {}) {
    entries_[name] = Entry{std::move(factory), std::move(description)};
  }

  bool Contains(const std::string& name) const { return entries_.count(name) > 0; }

  // Builds the component `name`; `where` locates the name in its config file.
  Product Create(const std::string& name, Args... args, const Location& where = {}) const {
    return Find(name, where).factory(std::forward<Args>(args)...);
  }

  const std::string& Description(const std::string& name) const { return Find(name, {}).description; }

  // The factory of `name` (a copy), for callers that build outside a lock.
  Factory FactoryOf(const std::string& name, const Location& where = {}) const {
    return Find(name, where).factory;
  }

  // Sorted names of every registered component.
  std::vector<std::string> Names() const {
    std::vector<std::string> names;
    for (const auto& [name, entry] : entries_) names.push_back(name);
    return names;
  }

 private:
  struct Entry {
    Factory factory;
    std::string description;
  };

  const Entry& Find(const std::string& name, const Location& where) const {
    auto it = entries_.find(name);
    if (it == entries_.end()) {
      throw ConfigError("unknown " + kind_ + " '" + name + "'." + DidYouMean(name, Names()), where,
                        "valid values are: " + Join(Names(), ", "));
    }
    return it->second;
  }

  std::string kind_;
  std::map<std::string, Entry> entries_;
};

}  // namespace gosim

#endif  // GOSIM_CORE_REGISTRY_H_
