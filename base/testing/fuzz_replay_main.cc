// A main() for fuzz targets built without libFuzzer (gcc, the normal test
// suite): runs LLVMFuzzerTestOneInput on every file named on the command line
// (or found in directories named there), then on deterministic mutations of
// them, so a plain `bazel test` exercises the target's checks on thousands of
// inputs. A failing input aborts, as it would under libFuzzer.
//
// Environment: GEX_FUZZ_MUTATIONS (default 20000) sets how many mutated
// inputs to run.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

using Input = std::vector<uint8_t>;

Input ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return Input(std::istreambuf_iterator<char>(in), {});
}

void Run(const Input& input) {
  LLVMFuzzerTestOneInput(input.data(), input.size());
}

// One random edit: flip, insert, delete, duplicate a span, or splice in
// bytes that parsers treat specially.
Input Mutate(const Input& seed, std::mt19937_64& rng) {
  static constexpr char kSpecial[] = "0123456789-+,:*/.xXkKmMgGtTbB \t";
  Input out = seed;
  auto pick = [&rng](size_t n) { return n == 0 ? 0 : rng() % n; };
  const int edits = 1 + static_cast<int>(pick(4));
  for (int e = 0; e < edits; ++e) {
    switch (pick(5)) {
      case 0:
        if (!out.empty()) out[pick(out.size())] ^= uint8_t(1u << pick(8));
        break;
      case 1:
        out.insert(out.begin() + long(pick(out.size() + 1)),
                   uint8_t(kSpecial[pick(sizeof(kSpecial) - 1)]));
        break;
      case 2:
        if (!out.empty()) out.erase(out.begin() + long(pick(out.size())));
        break;
      case 3:
        if (!out.empty() && out.size() < 4096) {
          const size_t at = pick(out.size());
          const size_t len = 1 + pick(out.size() - at);
          Input span(out.begin() + long(at), out.begin() + long(at + len));
          out.insert(out.begin() + long(pick(out.size() + 1)), span.begin(),
                     span.end());
        }
        break;
      case 4:
        out.insert(out.begin() + long(pick(out.size() + 1)),
                   uint8_t(rng() & 0xff));
        break;
    }
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<Input> seeds;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path arg(argv[i]);
    if (std::filesystem::is_directory(arg)) {
      for (const auto& entry : std::filesystem::directory_iterator(arg)) {
        if (entry.is_regular_file()) seeds.push_back(ReadFile(entry.path()));
      }
    } else {
      seeds.push_back(ReadFile(arg));
    }
  }
  if (seeds.empty()) {
    std::fprintf(stderr, "fuzz replay: no seed inputs given\n");
    return 1;
  }
  for (const Input& seed : seeds) Run(seed);

  const char* env = std::getenv("GEX_FUZZ_MUTATIONS");
  const long mutations = env != nullptr ? std::atol(env) : 20000;
  std::mt19937_64 rng(0x6765780a);  // Fixed: a failure reproduces.
  for (long i = 0; i < mutations; ++i) {
    Run(Mutate(seeds[rng() % seeds.size()], rng));
  }
  std::printf("fuzz replay: %zu seeds and %ld mutations ran clean\n",
              seeds.size(), mutations);
  return 0;
}
