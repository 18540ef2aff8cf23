#include "core/progress_list.h"

#include "base/fatal.h"

namespace gexrt::core {

void ProgressList::Add(Fn fn, void* context) {
  if (count_ == kCapacity) {
    FatalErrorF("core: more than %u progress functions registered",
                static_cast<unsigned>(kCapacity));
  }
  entries_[count_++] = Entry{fn, context};
}

}  // namespace gexrt::core
