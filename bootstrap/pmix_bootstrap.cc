#include "bootstrap/pmix_bootstrap.h"

#include <pmix.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/fatal.h"
#include "base/host_id.h"
#include "base/job_rank.h"
#include "base/string_view.h"
#include "bootstrap/bootstrap_timeout.h"
#include "bootstrap/current_call.h"
#include "bootstrap/exit_signal.h"
#include "bootstrap/pmix_bootstrap_pids.h"

namespace gexrt {

// One outstanding non-blocking PMIx call. Completed by PMIx's progress
// thread; waited for with a deadline. A wait that runs out is followed by
// a fatal error, so a late callback may still touch it: it is then leaked
// on purpose rather than freed under the callback's feet.
struct PmixPending {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  pmix_status_t status = PMIX_SUCCESS;
  pmix_data_type_t type = PMIX_UNDEF;
  std::string bytes;    // PMIX_BYTE_OBJECT or PMIX_STRING value.
  uint64_t number = 0;  // Integer value.

  void Complete(pmix_status_t s) {
    std::lock_guard<std::mutex> lock(mu);
    status = s;
    done = true;
    cv.notify_all();
  }
  // Waits until done or `deadline`; with `slice` set, returns after at
  // most that long (false: not done yet) so the caller can run its wait
  // hook between slices.
  bool WaitUntil(absl::Time deadline,
                 absl::Duration slice = absl::InfiniteDuration()) {
    const absl::Time until = std::min(deadline, absl::Now() + slice);
    std::unique_lock<std::mutex> lock(mu);
    while (!done) {
      const absl::Duration left = until - absl::Now();
      if (left <= absl::ZeroDuration()) return false;
      cv.wait_for(lock, absl::ToChronoNanoseconds(left));
    }
    return true;
  }
};

namespace {

// The live instance, for the fatal-error hook (one per process).
std::atomic<PmixBootstrap*> g_instance{nullptr};

// Whether PMIx_Abort is the way to end the job. Open MPI 4.1's mpirun
// (its runtime sets OMPI_COMM_WORLD_SIZE for every process it starts)
// ends the whole job by itself when a process exits nonzero or by a
// signal, while after a PMIx_Abort it sometimes left one of its own
// forked processes behind, the job never ending (4 of 20 runs of
// PmixBootstrapTest.AbortEndsTheJob). Slurm's srun needs the abort: it
// would leave the other ranks waiting in a fence (without -K1).
bool AbortThroughServer() {
  static const bool under_mpirun = getenv("OMPI_COMM_WORLD_SIZE") != nullptr;
  return !under_mpirun;
}

void AbortJobOnFatal() {
  if (PmixBootstrap* b = g_instance.exchange(nullptr)) b->AbortFromFatal();
  std::abort();
}

// The end signals a PMIx launcher sends to end a job (a rank died, or the
// user interrupted the launcher). Each is wrapped only where its
// disposition was still the default when the bootstrap started, so the
// handler in place at ExitReady is exit/'s, not a client's.
constexpr int kLauncherEndSignals[] = {SIGTERM, SIGINT, SIGHUP};
struct sigaction g_exit_actions[3];
bool g_default_at_start[3] = {};
volatile pid_t g_launcher_parent = 0;
volatile Rank g_my_rank = 0;
// Set once the launcher's daemon has asked this rank to end (OnEndSignal).
std::atomic<bool> g_launcher_ending{false};

int EndSignalIndex(int sig) {
  for (int i = 0; i < 3; ++i) {
    if (kLauncherEndSignals[i] == sig) return i;
  }
  return -1;
}

// An end signal from this rank's parent (mpirun or its orted, slurmstepd:
// the launcher's daemon that forked it) means the launcher is ending the
// whole job, usually because a rank died: mpirun sends SIGTERM 1 s after
// a rank's death and SIGKILL 1 s later, then exits without waiting for
// its ranks to die. A graceful exit that waits for the dead rank (the
// reduce window, the leader's replies: up to GASNET_EXITTIMEOUT) would
// still be running then. So the signal becomes the launcher's decision
// with "a rank was lost" (exit_signal.h, queued to this process; exit/
// skips the reduce and the election and exits with 128 + signal at
// once), as gasnetrun's own launcher hands it. Any other sender (a user
// signalling one rank) gets exit/'s handler as before.
void OnEndSignal(int sig, siginfo_t* info, void* context) {
  const int i = EndSignalIndex(sig);
  if (i < 0) return;
  if (info != nullptr && info->si_code == SI_USER && g_launcher_parent > 1 &&
      info->si_pid == g_launcher_parent) {
    ExitSignalValue v;
    v.initiator = g_my_rank;
    v.code = 128 + sig;
    v.peer_lost = true;
    g_launcher_ending.store(true);
    if (SendExitSignal(getpid(), v)) return;
  }
  const struct sigaction& old = g_exit_actions[i];
  if ((old.sa_flags & SA_SIGINFO) != 0) {
    old.sa_sigaction(sig, info, context);
  } else if (old.sa_handler == SIG_DFL) {
    signal(sig, SIG_DFL);
    raise(sig);  // Delivered, and fatal, once this handler returns.
  } else if (old.sa_handler != SIG_IGN) {
    old.sa_handler(sig);
  }
}

// The collectives' kinds, carried in every contribution's header.
enum Op : uint8_t { kAllgather = 1, kAlltoall = 2, kBroadcast = 3 };

const char* OpName(uint8_t op) {
  switch (op) {
    case kAllgather:
      return "allgather";
    case kAlltoall:
      return "alltoall";
    case kBroadcast:
      return "broadcast";
    default:
      return "unknown collective";
  }
}

// Header of every contribution: sequence number, kind, length per rank.
constexpr size_t kHeaderBytes = 4 + 1 + 8;

std::string_view PmixError(pmix_status_t s) { return PMIx_Error_string(s); }

void OnOpDone(pmix_status_t status, void* cbdata) {
  static_cast<PmixPending*>(cbdata)->Complete(status);
}

// The library keeps ownership of `kv` (it releases it once this returns),
// so the value is copied out.
void OnValue(pmix_status_t status, pmix_value_t* kv, void* cbdata) {
  auto* p = static_cast<PmixPending*>(cbdata);
  if (status == PMIX_SUCCESS && kv != nullptr) {
    std::lock_guard<std::mutex> lock(p->mu);
    p->type = kv->type;
    switch (kv->type) {
      case PMIX_BYTE_OBJECT:
        if (kv->data.bo.size > 0) {
          p->bytes.assign(kv->data.bo.bytes, kv->data.bo.size);
        }
        break;
      case PMIX_STRING:
        if (kv->data.string != nullptr) p->bytes = kv->data.string;
        break;
      case PMIX_UINT8:
        p->number = kv->data.uint8;
        break;
      case PMIX_UINT16:
        p->number = kv->data.uint16;
        break;
      case PMIX_UINT32:
        p->number = kv->data.uint32;
        break;
      case PMIX_UINT64:
        p->number = kv->data.uint64;
        break;
      case PMIX_INT:
        p->number = static_cast<uint64_t>(kv->data.integer);
        break;
      case PMIX_PROC_RANK:
        p->number = kv->data.rank;
        break;
      default:
        break;
    }
  }
  p->Complete(status == PMIX_SUCCESS && kv == nullptr ? PMIX_ERR_NOT_FOUND
                                                      : status);
}

// Runs `body` (a blocking call PMIx offers no non-blocking form of) while
// a watchdog thread ends the process with `what_failed` if it has not
// returned by the deadline.
template <typename Body>
void Bounded(absl::Duration timeout, const std::string& what_failed,
             Body body) {
  std::mutex mu;
  std::condition_variable cv;
  bool finished = false;
  std::thread watchdog([&] {
    std::unique_lock<std::mutex> lock(mu);
    if (!cv.wait_for(lock, absl::ToChronoNanoseconds(timeout),
                     [&] { return finished; })) {
      FatalErrorF("%s within %s", what_failed, absl::FormatDuration(timeout));
    }
  });
  body();
  {
    std::lock_guard<std::mutex> lock(mu);
    finished = true;
  }
  cv.notify_all();
  watchdog.join();
}

std::string DetectLauncherName() {
  if (std::getenv("SLURM_STEP_ID") != nullptr ||
      std::getenv("SLURM_JOB_ID") != nullptr) {
    return "srun";
  }
  if (std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr ||
      std::getenv("OMPI_MCA_ess") != nullptr) {
    return "mpirun";
  }
  return "the PMIx launcher";
}

// The PMIX_INFO array for a request: the server is asked to give up at
// the same bound we wait for, so a timed-out operation is cleaned up there.
struct InfoArray {
  pmix_info_t info[3];
  size_t n = 0;
  InfoArray() { std::memset(info, 0, sizeof info); }
  ~InfoArray() {
    for (size_t i = 0; i < n; ++i) PMIX_INFO_DESTRUCT(&info[i]);
  }
  void Bool(const char* key, bool v) {
    PMIx_Info_load(&info[n++], key, &v, PMIX_BOOL);
  }
  void Int(const char* key, int v) {
    PMIx_Info_load(&info[n++], key, &v, PMIX_INT);
  }
};

int TimeoutSeconds(absl::Duration d) {
  const int64_t s = absl::ToInt64Seconds(absl::Ceil(d, absl::Seconds(1)));
  return s > INT32_MAX ? INT32_MAX : static_cast<int>(std::max<int64_t>(s, 1));
}

std::vector<Rank> ParseRankList(std::string_view list) {
  std::vector<Rank> ranks;
  for (absl::string_view part :
       absl::StrSplit(ToAbsl(list), ',', absl::SkipEmpty())) {
    uint32_t r = 0;
    if (absl::SimpleAtoi(part, &r)) ranks.push_back(r);
  }
  std::sort(ranks.begin(), ranks.end());
  return ranks;
}

}  // namespace

bool PmixBootstrap::Present() {
  return std::getenv("PMIX_RANK") != nullptr ||
         std::getenv("PMIX_NAMESPACE") != nullptr;
}

absl::StatusOr<std::unique_ptr<PmixBootstrap>> PmixBootstrap::Create() {
  std::unique_ptr<PmixBootstrap> b(new PmixBootstrap());
  b->timeout_ = BootstrapTimeoutFromEnv();
  b->launcher_ = DetectLauncherName();
  pmix_proc_t me;
  std::memset(&me, 0, sizeof me);
  pmix_status_t rc = PMIX_SUCCESS;
  Bounded(b->timeout_,
          absl::StrFormat("bootstrap: PMIx_Init: no answer from the PMIx "
                          "server (%s)",
                          b->launcher_),
          [&] { rc = PMIx_Init(&me, nullptr, 0); });
  // Without a server, PMIx 4 may still "succeed" as a singleton in a
  // namespace of its own making; a process the environment says was
  // launched must have reached the server it names.
  const char* env_nspace = std::getenv("PMIX_NAMESPACE");
  bool has_server = false;
  for (const char* uri :
       {"PMIX_SERVER_URI41", "PMIX_SERVER_URI4", "PMIX_SERVER_URI3",
        "PMIX_SERVER_URI21", "PMIX_SERVER_URI2"}) {
    const char* v = std::getenv(uri);
    if (v != nullptr && *v != '\0') has_server = true;
  }
  if (rc != PMIX_SUCCESS || !has_server ||
      (env_nspace != nullptr && std::strcmp(env_nspace, me.nspace) != 0)) {
    if (rc == PMIX_SUCCESS) PMIx_Finalize(nullptr, 0);
    return absl::FailedPreconditionError(absl::StrFormat(
        "this process has PMIx variables in its environment (PMIX_RANK=%s, "
        "PMIX_NAMESPACE=%s) but no PMIx server answered PMIx_Init (%s); "
        "start it with `srun --mpi=pmix`, `mpirun`, or gasnetrun_<conduit> "
        "-spawner=pmi, or unset the PMIX_* variables to run it alone",
        std::getenv("PMIX_RANK") ? std::getenv("PMIX_RANK") : "",
        env_nspace != nullptr ? env_nspace : "",
        rc != PMIX_SUCCESS ? PmixError(rc)
                           : std::string_view("no server address given")));
  }
  b->nspace_ = me.nspace;
  b->rank_ = me.rank;
  SetJobRank(static_cast<int>(b->rank_));
  g_my_rank = b->rank_;
  // The launcher's daemon that forked this rank (mpirun, orted,
  // slurmstepd): the rank dies with it, so a launcher killed outright
  // leaves no rank behind (they would otherwise spin, or wait in a fence
  // for GASNET_BOOTSTRAP_TIMEOUT). Checked again after the prctl: a
  // parent that is already gone did not trigger it.
  const pid_t parent = getppid();
  if (parent > 1) {
    g_launcher_parent = parent;
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) {
      FatalErrorF(
          "bootstrap: the process that started this rank (pid %d, %s) "
          "ended during start-up",
          parent, b->launcher_);
    }
  }
  for (int i = 0; i < 3; ++i) {
    struct sigaction now;
    g_default_at_start[i] =
        sigaction(kLauncherEndSignals[i], nullptr, &now) == 0 &&
        (now.sa_flags & SA_SIGINFO) == 0 && now.sa_handler == SIG_DFL;
  }
  // For gasnetrun -spawner=pmi: it waits for (or ends) every rank of its
  // host before it returns, by these records (pmix_bootstrap_pids.h).
  if (const char* dir = std::getenv(kPmiRankDirVar);
      dir != nullptr && *dir != '\0') {
    (void)WriteOwnRankRecord(dir, b->rank_);
  }

  pmix_proc_t job;
  PMIX_LOAD_PROCID(&job, me.nspace, PMIX_RANK_WILDCARD);
  auto get_number = [&](const pmix_proc_t& who, const char* key, bool required,
                        uint64_t* out) -> absl::Status {
    PmixPending* p = new PmixPending();
    InfoArray info;
    info.Bool(PMIX_OPTIONAL, true);  // job facts are local after init
    pmix_status_t s = PMIx_Get_nb(&who, key, info.info, info.n, &OnValue, p);
    if (s != PMIX_SUCCESS) {
      delete p;
      if (!required) return absl::OkStatus();
      return absl::InternalError(
          absl::StrFormat("PMIx_Get(%s): %s", key, PmixError(s)));
    }
    if (!p->WaitUntil(absl::Now() + b->timeout_)) {
      FatalErrorF(
          "bootstrap: PMIx_Get(%s): no answer from the PMIx server "
          "(%s) within %s",
          key, b->launcher_, absl::FormatDuration(b->timeout_));
    }
    absl::Status result = absl::OkStatus();
    if (p->status == PMIX_SUCCESS) {
      *out = p->number;
    } else if (required) {
      result = absl::InternalError(
          absl::StrFormat("PMIx_Get(%s): %s", key, PmixError(p->status)));
    }
    delete p;
    return result;
  };
  uint64_t size = 0;
  if (absl::Status s = get_number(job, PMIX_JOB_SIZE, true, &size); !s.ok()) {
    PMIx_Finalize(nullptr, 0);
    return s;
  }
  if (size < 1 || size > UINT32_MAX - 1 || b->rank_ >= size) {
    PMIx_Finalize(nullptr, 0);
    return absl::InternalError(absl::StrFormat(
        "PMIx says this is rank %d of a job of %d", b->rank_, size));
  }
  b->size_ = static_cast<Rank>(size);

  // The node facts: optional (a server may not give them). They decide the
  // node map's hosts (LauncherNodeId, DiscoverNodeMap).
  uint64_t v = UINT64_MAX;
  if (get_number(me, PMIX_NODEID, false, &v).ok() && v != UINT64_MAX) {
    b->node_.node_id = static_cast<uint32_t>(v);
    b->node_.has_node_id = true;
  }
  v = 0;
  if (get_number(me, PMIX_LOCAL_RANK, false, &v).ok()) b->node_.local_rank = v;
  v = 0;
  if (get_number(job, PMIX_LOCAL_SIZE, false, &v).ok()) b->node_.local_size = v;
  for (const bool hostname : {true, false}) {
    pmix_value_t* val = nullptr;
    InfoArray info;
    info.Bool(PMIX_OPTIONAL, true);
    if (PMIx_Get(hostname ? &me : &job,
                 hostname ? PMIX_HOSTNAME : PMIX_LOCAL_PEERS, info.info, info.n,
                 &val) == PMIX_SUCCESS &&
        val != nullptr) {
      if (val->type == PMIX_STRING && val->data.string != nullptr) {
        if (hostname) {
          b->node_.hostname = val->data.string;
        } else {
          b->node_.local_peers = ParseRankList(val->data.string);
        }
      }
      PMIX_VALUE_RELEASE(val);
    }
  }

  g_instance.store(b.get());
  SetFatalExitHook(&AbortJobOnFatal);
  return b;
}

PmixBootstrap::~PmixBootstrap() {
  PmixBootstrap* self = this;
  g_instance.compare_exchange_strong(self, nullptr);
}

void PmixBootstrap::AbortFromFatal() {
  if (finalized_) return;
  // PMIx_Abort waits for the server, which kills every rank of the job
  // (this one included); if it returns, the caller aborts anyway (and
  // under mpirun that SIGABRT is how the job ends).
  if (!AbortThroughServer()) return;
  PMIx_Abort(1, "fatal error (see the rank's message above)", nullptr, 0);
}

void PmixBootstrap::CheckOpen(std::string_view call) const {
  if (finalized_)
    FatalErrorF("bootstrap %s called after Bootstrap::Fini", call);
}

std::string PmixBootstrap::Header(uint32_t seq, uint8_t op,
                                  uint64_t len) const {
  std::string h(kHeaderBytes, '\0');
  std::memcpy(h.data(), &seq, 4);
  h[4] = static_cast<char>(op);
  std::memcpy(h.data() + 5, &len, 8);
  return h;
}

std::string_view PmixBootstrap::Payload(std::string_view call, uint32_t seq,
                                        Rank peer, std::string_view blob,
                                        uint8_t op, uint64_t len) const {
  if (blob.size() < kHeaderBytes) {
    FatalErrorF("bootstrap %s #%d: rank %d's contribution is malformed", call,
                seq, peer);
  }
  uint32_t their_seq = 0;
  uint64_t their_len = 0;
  std::memcpy(&their_seq, blob.data(), 4);
  const uint8_t their_op = static_cast<uint8_t>(blob[4]);
  std::memcpy(&their_len, blob.data() + 5, 8);
  if (their_seq != seq || their_op != op) {
    FatalErrorF("bootstrap %s #%d: rank %d called %s #%d instead", call, seq,
                peer, OpName(their_op), their_seq);
  }
  if (their_len != len) {
    FatalErrorF("bootstrap %s #%d: rank %d passed %d bytes, this rank %d", call,
                seq, peer, their_len, len);
  }
  return blob.substr(kHeaderBytes);
}

void PmixBootstrap::PutCommit(std::string_view call, const std::string& key,
                              std::string value) {
  pmix_byte_object_t bo;
  bo.bytes = value.data();
  bo.size = value.size();
  pmix_value_t v;
  // PMIx_Value_load copies the bytes.
  PMIx_Value_load(&v, &bo, PMIX_BYTE_OBJECT);
  pmix_status_t s = PMIx_Put(PMIX_GLOBAL, key.c_str(), &v);
  PMIx_Value_destruct(&v);
  if (s == PMIX_SUCCESS) s = PMIx_Commit();
  if (s != PMIX_SUCCESS) {
    FatalErrorF("bootstrap %s: PMIx_Put/Commit(%s): %s", call, key,
                PmixError(s));
  }
}

bool PmixBootstrap::Wait(PmixPending* p, absl::Time deadline) const {
  if (!has_wait_hook()) return p->WaitUntil(deadline);
  // In slices of a millisecond, driving the conduit's sends between them
  // (bootstrap.h, SetWaitHook): PMIx's own progress thread completes the
  // operation meanwhile.
  while (!p->WaitUntil(deadline, absl::Milliseconds(1))) {
    if (absl::Now() >= deadline) return false;
    RunWaitHook();
  }
  return true;
}

void PmixBootstrap::Fence(std::string_view call, uint32_t seq, bool collect) {
  InfoArray info;
  if (collect) info.Bool(PMIX_COLLECT_DATA, true);
  info.Int(PMIX_TIMEOUT, TimeoutSeconds(timeout_));
  auto* p = new PmixPending();
  pmix_status_t s = PMIx_Fence_nb(nullptr, 0, info.info, info.n, &OnOpDone, p);
  if (s == PMIX_OPERATION_SUCCEEDED) {  // Done at once; no callback comes.
    delete p;
    return;
  }
  if (s != PMIX_SUCCESS) {
    delete p;
    FatalErrorF("bootstrap %s #%d: PMIx_Fence: %s", call, seq, PmixError(s));
  }
  if (!Wait(p, absl::Now() + timeout_)) {
    const char* in_call = CurrentCall();
    FatalErrorF(
        "%sbootstrap %s #%d: the PMIx fence over the %d ranks of namespace "
        "'%s' did not complete within %s: a rank did not join it, or the "
        "PMIx server (%s) stopped answering (GASNET_BOOTSTRAP_TIMEOUT)",
        in_call != nullptr ? absl::StrCat(in_call, ": ") : std::string(), call,
        seq, size_, nspace_, absl::FormatDuration(timeout_), launcher_);
  }
  const pmix_status_t done = p->status;
  delete p;
  if (done != PMIX_SUCCESS) {
    FatalErrorF(
        "bootstrap %s #%d: the PMIx fence over namespace '%s' failed (%s): "
        "%s",
        call, seq, nspace_, PmixError(done),
        done == PMIX_ERR_TIMEOUT
            ? absl::StrCat("a rank did not join within ",
                           absl::FormatDuration(timeout_),
                           " (GASNET_BOOTSTRAP_TIMEOUT)")
            : std::string("a rank of the job ended before joining it"));
  }
}

std::string PmixBootstrap::Get(std::string_view call, uint32_t seq, Rank peer,
                               const std::string& key) {
  pmix_proc_t who;
  PMIX_LOAD_PROCID(&who, nspace_.c_str(), peer);
  InfoArray info;
  info.Int(PMIX_TIMEOUT, TimeoutSeconds(timeout_));
  auto* p = new PmixPending();
  pmix_status_t s =
      PMIx_Get_nb(&who, key.c_str(), info.info, info.n, &OnValue, p);
  if (s != PMIX_SUCCESS) {
    delete p;
    FatalErrorF("bootstrap %s #%d: PMIx_Get of rank %d's data: %s", call, seq,
                peer, PmixError(s));
  }
  if (!Wait(p, absl::Now() + timeout_)) {
    FatalErrorF(
        "bootstrap %s #%d: rank %d's data did not arrive within %s "
        "(GASNET_BOOTSTRAP_TIMEOUT; PMIx server: %s)",
        call, seq, peer, absl::FormatDuration(timeout_), launcher_);
  }
  if (p->status == PMIX_ERR_NOT_FOUND) {
    delete p;
    FatalErrorF(
        "bootstrap %s #%d: rank %d contributed nothing to it (did it call "
        "another collective, or Barrier, at this point?)",
        call, seq, peer);
  }
  if (p->status != PMIX_SUCCESS || p->type != PMIX_BYTE_OBJECT) {
    const pmix_status_t st = p->status;
    delete p;
    FatalErrorF("bootstrap %s #%d: PMIx_Get of rank %d's data: %s", call, seq,
                peer,
                st != PMIX_SUCCESS ? PmixError(st)
                                   : std::string_view("not a byte object"));
  }
  std::string bytes = std::move(p->bytes);
  delete p;
  return bytes;
}

void PmixBootstrap::Barrier() {
  CheckOpen("barrier");
  Fence("barrier", next_seq_++, /*collect=*/false);
}

void PmixBootstrap::Allgather(const void* src, size_t len, void* dst) {
  CheckOpen("allgather");
  const uint32_t seq = next_seq_++;
  const std::string key = absl::StrCat("gex.", seq);
  std::string mine = Header(seq, kAllgather, len);
  mine.append(static_cast<const char*>(src), len);
  PutCommit("allgather", key, mine);
  Fence("allgather", seq, /*collect=*/true);
  char* out = static_cast<char*>(dst);
  // `src` may lie inside `dst`: this rank's block is written from the copy.
  for (Rank r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    const std::string blob = Get("allgather", seq, r, key);
    std::string_view data = Payload("allgather", seq, r, blob, kAllgather, len);
    if (len > 0) std::memcpy(out + r * len, data.data(), len);
  }
  if (len > 0) std::memcpy(out + rank_ * len, mine.data() + kHeaderBytes, len);
}

void PmixBootstrap::Alltoall(const void* src, size_t len, void* dst) {
  CheckOpen("alltoall");
  const uint32_t seq = next_seq_++;
  const char* in = static_cast<const char*>(src);
  for (Rank r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    std::string block = Header(seq, kAlltoall, len);
    block.append(in + r * len, len);
    pmix_byte_object_t bo{block.data(), block.size()};
    pmix_value_t v;
    PMIx_Value_load(&v, &bo, PMIX_BYTE_OBJECT);
    const std::string key = absl::StrCat("gex.", seq, ".", r);
    pmix_status_t s = PMIx_Put(PMIX_GLOBAL, key.c_str(), &v);
    PMIx_Value_destruct(&v);
    if (s != PMIX_SUCCESS) {
      FatalErrorF("bootstrap alltoall #%d: PMIx_Put: %s", seq, PmixError(s));
    }
  }
  if (pmix_status_t s = PMIx_Commit(); s != PMIX_SUCCESS) {
    FatalErrorF("bootstrap alltoall #%d: PMIx_Commit: %s", seq, PmixError(s));
  }
  Fence("alltoall", seq, /*collect=*/true);
  std::string own(in + rank_ * len, len);
  char* out = static_cast<char*>(dst);
  const std::string key = absl::StrCat("gex.", seq, ".", rank_);
  for (Rank r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    const std::string blob = Get("alltoall", seq, r, key);
    std::string_view data = Payload("alltoall", seq, r, blob, kAlltoall, len);
    if (len > 0) std::memcpy(out + r * len, data.data(), len);
  }
  if (len > 0) std::memcpy(out + rank_ * len, own.data(), len);
}

void PmixBootstrap::Broadcast(const void* src, size_t len, void* dst,
                              Rank root) {
  CheckOpen("broadcast");
  if (root >= size_) {
    FatalErrorF(
        "bootstrap broadcast: root %d is not a rank of this %d-rank "
        "job",
        root, size_);
  }
  const uint32_t seq = next_seq_++;
  const std::string key = absl::StrCat("gex.", seq);
  if (rank_ == root) {
    std::string mine = Header(seq, kBroadcast, len);
    mine.append(static_cast<const char*>(src), len);
    PutCommit("broadcast", key, std::move(mine));
  }
  Fence("broadcast", seq, /*collect=*/true);
  if (rank_ == root) {
    if (len > 0 && src != dst) std::memmove(dst, src, len);
    return;
  }
  const std::string blob = Get("broadcast", seq, root, key);
  std::string_view data =
      Payload("broadcast", seq, root, blob, kBroadcast, len);
  if (len > 0) std::memcpy(dst, data.data(), len);
}

void PmixBootstrap::ExitReady() {
  for (int i = 0; i < 3; ++i) {
    if (!g_default_at_start[i]) continue;
    struct sigaction now;
    if (sigaction(kLauncherEndSignals[i], nullptr, &now) != 0) continue;
    // Nobody handles it (exit/ did not install its handlers): the default
    // already ends the rank at once.
    if ((now.sa_flags & SA_SIGINFO) == 0 && now.sa_handler == SIG_DFL) {
      continue;
    }
    g_exit_actions[i] = now;
    struct sigaction wrap;
    std::memset(&wrap, 0, sizeof wrap);
    wrap.sa_sigaction = &OnEndSignal;
    wrap.sa_flags = SA_SIGINFO | SA_RESTART;
    wrap.sa_mask = now.sa_mask;
    sigaction(kLauncherEndSignals[i], &wrap, nullptr);
  }
}

std::optional<uint64_t> PmixBootstrap::LauncherNodeId() const {
  if (node_.has_node_id) return node_.node_id;
  // Without PMIX_NODEID the node's name tells nodes apart, hashed as host
  // names are for host ids. One job never mixes the two forms: every rank
  // asks the same launcher's PMIx server.
  if (!node_.hostname.empty()) return Fnv1a64(node_.hostname);
  return std::nullopt;
}

void PmixBootstrap::Abort(int exit_code, std::string_view reason) {
  g_instance.store(nullptr);
  if (!finalized_ && AbortThroughServer()) {
    const std::string msg(reason);
    PMIx_Abort(exit_code, msg.c_str(), nullptr, 0);
  }
  _exit(exit_code);
}

void PmixBootstrap::Fini() {
  if (finalized_) return;
  finalized_ = true;
  PmixBootstrap* self = this;
  g_instance.compare_exchange_strong(self, nullptr);
  // The launcher is ending the job (OnEndSignal): its server may not
  // answer any more (mpirun's sleeps between its SIGTERM and SIGKILL with
  // its event loop stopped, so PMIx_Finalize waited for the SIGKILL), and
  // the job has failed anyway, which a missing finalize tells it.
  if (g_launcher_ending.load()) return;
  // Not collective (no PMIX_EMBED_BARRIER). No watchdog thread here: the
  // exit path that calls Fini runs under exit/'s exit alarm
  // (GASNET_EXITTIMEOUT), which bounds this wait, and may run in a context
  // where starting a thread is unwise.
  PMIx_Finalize(nullptr, 0);
}

}  // namespace gexrt
