#include "pshm/shared_object.h"

#include <cstdlib>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/env/settings.h"
#include "pshm/mechanism_impl.h"

namespace gexrt::pshm {

std::string_view MechanismName() { return mechanism::Name(); }

std::string ObjectName::Path() const {
  return mechanism::Path(job_prefix, owner, serial);
}

absl::StatusOr<SharedObject> SharedObject::Create(const ObjectName& name,
                                                  size_t size) {
  SharedObject object;
  object.path_ = name.Path();
  mechanism::Mapping mapping;
  if (absl::Status s = mechanism::Create(object.path_, size, &mapping);
      !s.ok()) {
    return s;
  }
  object.address_ = mapping.address;
  object.size_ = size;
  object.id_ = mapping.id;
  object.owner_ = true;
  object.named_ = mapping.named;
  return object;
}

absl::StatusOr<SharedObject> SharedObject::Map(const ObjectName& name,
                                               int64_t id, size_t size) {
  SharedObject object;
  object.path_ = name.Path();
  mechanism::Mapping mapping;
  if (absl::Status s = mechanism::Map(object.path_, id, size, &mapping);
      !s.ok()) {
    return s;
  }
  object.address_ = mapping.address;
  object.size_ = size;
  object.id_ = id;
  return object;
}

SharedObject::SharedObject(SharedObject&& other) noexcept
    : address_(std::exchange(other.address_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      id_(std::exchange(other.id_, 0)),
      owner_(std::exchange(other.owner_, false)),
      named_(std::exchange(other.named_, false)),
      path_(std::move(other.path_)) {}

SharedObject& SharedObject::operator=(SharedObject&& other) noexcept {
  if (this != &other) {
    Release();
    address_ = std::exchange(other.address_, nullptr);
    size_ = std::exchange(other.size_, 0);
    id_ = std::exchange(other.id_, 0);
    owner_ = std::exchange(other.owner_, false);
    named_ = std::exchange(other.named_, false);
    path_ = std::move(other.path_);
  }
  return *this;
}

SharedObject::~SharedObject() { Release(); }

void SharedObject::Release() {
  if (owner_ && named_) (void)RemoveName();
  if (address_ != nullptr) mechanism::Unmap(address_, size_);
  address_ = nullptr;
  size_ = 0;
}

absl::Status SharedObject::RemoveName() {
  if (!owner_ || !named_) return absl::OkStatus();
  named_ = false;
  return mechanism::RemoveName(path_);
}

int RemoveJobObjects(std::string_view job_prefix,
                     absl::Span<const pid_t> rank_pids) {
  if (job_prefix.empty()) return 0;
  return mechanism::RemoveAll(job_prefix, rank_pids);
}

std::vector<std::string> ListJobObjects(std::string_view job_prefix,
                                        absl::Span<const pid_t> rank_pids) {
  if (job_prefix.empty()) return {};
  return mechanism::List(job_prefix, rank_pids);
}

uint64_t AvailableSharedMemory() { return mechanism::Available(); }

namespace internal {
std::string FileDirectory() {
  for (const char* name : {"GASNET_TMPDIR", "TMPDIR"}) {
    const char* value = std::getenv(name);
    if (value != nullptr && value[0] != '\0') return value;
  }
  return "/tmp";
}
}  // namespace internal

}  // namespace gexrt::pshm
