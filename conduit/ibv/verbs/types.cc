#include "conduit/ibv/verbs/types.h"

#include <cstdio>

namespace gexrt::ibv::verbs {

bool Gid::IsZero() const {
  for (uint8_t b : raw) {
    if (b != 0) return false;
  }
  return true;
}

std::string_view ToString(PortState s) {
  switch (s) {
    case PortState::kDown:
      return "DOWN";
    case PortState::kInit:
      return "INIT";
    case PortState::kArmed:
      return "ARMED";
    case PortState::kActive:
      return "ACTIVE";
    case PortState::kActiveDefer:
      return "ACTIVE_DEFER";
  }
  return "?";
}

std::string_view ToString(QpState s) {
  switch (s) {
    case QpState::kReset:
      return "RESET";
    case QpState::kInit:
      return "INIT";
    case QpState::kRtr:
      return "RTR";
    case QpState::kRts:
      return "RTS";
    case QpState::kSqd:
      return "SQD";
    case QpState::kSqe:
      return "SQE";
    case QpState::kError:
      return "ERROR";
  }
  return "?";
}

std::string_view ToString(QpType t) { return t == QpType::kRc ? "RC" : "UD"; }

std::string_view ToString(WcStatus s) {
  switch (s) {
    case WcStatus::kSuccess:
      return "success";
    case WcStatus::kLocalLengthError:
      return "local length error";
    case WcStatus::kLocalQpOperationError:
      return "local QP operation error";
    case WcStatus::kLocalProtectionError:
      return "local protection error";
    case WcStatus::kFlushError:
      return "work request flushed error";
    case WcStatus::kBadResponse:
      return "bad response error";
    case WcStatus::kLocalAccessError:
      return "local access error";
    case WcStatus::kRemoteInvalidRequest:
      return "remote invalid request error";
    case WcStatus::kRemoteAccessError:
      return "remote access error";
    case WcStatus::kRemoteOperationError:
      return "remote operation error";
    case WcStatus::kRetryExceeded:
      return "transport retry counter exceeded";
    case WcStatus::kRnrRetryExceeded:
      return "RNR retry counter exceeded";
    case WcStatus::kGeneralError:
      return "general error";
  }
  return "?";
}

std::string_view ToString(WcOpcode o) {
  switch (o) {
    case WcOpcode::kSend:
      return "SEND";
    case WcOpcode::kRdmaWrite:
      return "RDMA_WRITE";
    case WcOpcode::kRdmaRead:
      return "RDMA_READ";
    case WcOpcode::kAtomicCompareSwap:
      return "COMP_SWAP";
    case WcOpcode::kAtomicFetchAdd:
      return "FETCH_ADD";
    case WcOpcode::kRecv:
      return "RECV";
    case WcOpcode::kRecvRdmaWithImm:
      return "RECV_RDMA_WITH_IMM";
  }
  return "?";
}

std::string_view ToString(Opcode o) {
  switch (o) {
    case Opcode::kSend:
      return "SEND";
    case Opcode::kSendWithImm:
      return "SEND_WITH_IMM";
    case Opcode::kRdmaWrite:
      return "RDMA_WRITE";
    case Opcode::kRdmaWriteWithImm:
      return "RDMA_WRITE_WITH_IMM";
    case Opcode::kRdmaRead:
      return "RDMA_READ";
    case Opcode::kAtomicFetchAdd:
      return "ATOMIC_FETCH_AND_ADD";
    case Opcode::kAtomicCompareSwap:
      return "ATOMIC_CMP_AND_SWP";
  }
  return "?";
}

std::string_view ToString(AsyncEventType t) {
  switch (t) {
    case AsyncEventType::kCqError:
      return "CQ error";
    case AsyncEventType::kQpFatal:
      return "QP fatal";
    case AsyncEventType::kQpRequestError:
      return "QP request error";
    case AsyncEventType::kQpAccessError:
      return "QP access error";
    case AsyncEventType::kCommEstablished:
      return "communication established";
    case AsyncEventType::kSqDrained:
      return "SQ drained";
    case AsyncEventType::kSrqError:
      return "SRQ error";
    case AsyncEventType::kSrqLimitReached:
      return "SRQ limit reached";
    case AsyncEventType::kQpLastWqeReached:
      return "last WQE reached";
    case AsyncEventType::kPortActive:
      return "port active";
    case AsyncEventType::kPortError:
      return "port error";
    case AsyncEventType::kLidChange:
      return "LID change";
    case AsyncEventType::kPkeyChange:
      return "P_Key change";
    case AsyncEventType::kGidChange:
      return "GID change";
    case AsyncEventType::kSmChange:
      return "SM change";
    case AsyncEventType::kClientReregister:
      return "client reregistration";
    case AsyncEventType::kDeviceFatal:
      return "device fatal";
    case AsyncEventType::kOther:
      return "other";
  }
  return "?";
}

std::string ToString(const Gid& gid) {
  char buf[48];
  char* p = buf;
  for (int i = 0; i < 16; i += 2) {
    p += std::snprintf(p, buf + sizeof(buf) - p, "%s%02x%02x", i ? ":" : "",
                       gid.raw[i], gid.raw[i + 1]);
  }
  return std::string(buf);
}

uint32_t RnrTimerMicros(uint8_t encoded) {
  // IBA table 45, in units of 10 us (entry 0 is 655.36 ms).
  static constexpr uint32_t kTens[32] = {
      65536, 1,    2,    3,    4,    6,     8,     12,    16,    24,   32,
      48,    64,   96,   128,  192,  256,   384,   512,   768,   1024, 1536,
      2048,  3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152};
  return kTens[encoded & 31] * 10;
}

uint64_t AckTimeoutMicros(uint8_t timeout) {
  if (timeout == 0) return 0;
  // 4.096 us * 2^timeout, computed in nanoseconds.
  return (uint64_t{4096} << (timeout & 31)) / 1000;
}

bool IsValidMtu(uint32_t bytes) {
  return bytes == 256 || bytes == 512 || bytes == 1024 || bytes == 2048 ||
         bytes == 4096;
}

}  // namespace gexrt::ibv::verbs
