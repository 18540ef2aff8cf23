#include "am/vocabulary.h"

namespace gexrt::am {

const char* CategoryName(Category c) {
  switch (c) {
    case Category::kShort:
      return "Short";
    case Category::kMedium:
      return "Medium";
    case Category::kLong:
      return "Long";
  }
  return "?";
}

}  // namespace gexrt::am
