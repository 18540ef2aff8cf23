// The functions that run on every round of progress besides polling the
// networks: the barrier's and the collectives' state machines register
// here at start-up, so core/ calls them without knowing them by name.
//
//   ProgressList list;
//   list.Add(&Barrier::ProgressThunk, &barrier);   // at gex_Client_Init
//   list.Run();                                    // each poll
//
// Registration happens while the process is still single-threaded (client
// initialisation); Run takes no lock and allocates nothing.
#ifndef GEX_CORE_PROGRESS_LIST_H_
#define GEX_CORE_PROGRESS_LIST_H_

#include <array>
#include <cstddef>

namespace gexrt::core {

class ProgressList {
 public:
  using Fn = void (*)(void* context);
  static constexpr size_t kCapacity = 8;

  // Adds fn(context) to every later Run. A fatal error past kCapacity.
  void Add(Fn fn, void* context);

  void Run() const {
    for (size_t i = 0; i < count_; ++i) entries_[i].fn(entries_[i].context);
  }
  size_t size() const { return count_; }

 private:
  struct Entry {
    Fn fn = nullptr;
    void* context = nullptr;
  };
  std::array<Entry, kCapacity> entries_;
  size_t count_ = 0;
};

}  // namespace gexrt::core

#endif  // GEX_CORE_PROGRESS_LIST_H_
