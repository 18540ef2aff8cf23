#include "base/pre_exit.h"

#include <atomic>

#include "base/fatal.h"

namespace gexrt {
namespace {

std::atomic<void (*)()> g_hooks[kMaxPreExitHooks] = {};
std::atomic<bool> g_ran{false};

}  // namespace

void AddPreExitHook(void (*hook)()) {
  for (auto& slot : g_hooks) {
    void (*expected)() = nullptr;
    if (slot.load() == hook) return;
    if (slot.compare_exchange_strong(expected, hook)) return;
    if (expected == hook) return;
  }
  FatalErrorF("AddPreExitHook: more than %d hooks", kMaxPreExitHooks);
}

void RunPreExitHooks() {
  if (g_ran.exchange(true)) return;
  for (auto& slot : g_hooks) {
    void (*hook)() = slot.load();
    if (hook == nullptr) break;
    hook();
  }
}

}  // namespace gexrt
