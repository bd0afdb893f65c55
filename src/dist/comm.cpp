#include "dist/comm.hpp"

#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <vector>

namespace marlsched::dist {

void throw_mpi_error(int code, const char* call, const char* file, int line) {
  char msg[MPI_MAX_ERROR_STRING] = {0};
  int len = 0;
  MPI_Error_string(code, msg, &len);
  std::ostringstream os;
  os << "MPI call failed: " << call << ": " << std::string(msg, static_cast<std::size_t>(len));
  throw MpiError(os.str(), detail::where(file, line));
}

Session::Session(int* argc, char*** argv) {
  int init = 0;
  MPI_Initialized(&init);
  if (!init) {
    int provided = 0;
    MARLSCHED_MPI_CHECK(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided));
    owns_ = true;
  }
}

Session::~Session() {
  if (!owns_) return;
  int fin = 0;
  MPI_Finalized(&fin);
  if (!fin) MPI_Finalize();
}

bool thread_multiple() {
  int init = 0, fin = 0, level = MPI_THREAD_SINGLE;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (!init || fin) return false;
  MPI_Query_thread(&level);
  return level >= MPI_THREAD_MULTIPLE;
}

Comm Comm::dup() const {
  MPI_Comm c = MPI_COMM_NULL;
  MARLSCHED_MPI_CHECK(MPI_Comm_dup(comm_, &c));
  return Comm(c, true);
}

Comm Comm::world() {
  MPI_Comm c = MPI_COMM_NULL;
  MARLSCHED_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &c));
  return Comm(c, true);
}

Comm::Comm(MPI_Comm c, bool owned) : comm_(c), owned_(owned) {
  MARLSCHED_MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
  MARLSCHED_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
  MARLSCHED_MPI_CHECK(MPI_Comm_size(comm_, &size_));
}

Comm::~Comm() {
  if (owned_ && comm_ != MPI_COMM_NULL) {
    int fin = 0;
    MPI_Finalized(&fin);
    if (!fin) MPI_Comm_free(&comm_);
  }
}

Comm::Comm(Comm&& o) noexcept : comm_(o.comm_), owned_(o.owned_), rank_(o.rank_), size_(o.size_) {
  o.comm_ = MPI_COMM_NULL;
  o.owned_ = false;
}

Comm& Comm::operator=(Comm&& o) noexcept {
  if (this != &o) {
    this->~Comm();
    comm_ = o.comm_;
    owned_ = o.owned_;
    rank_ = o.rank_;
    size_ = o.size_;
    o.comm_ = MPI_COMM_NULL;
    o.owned_ = false;
  }
  return *this;
}

Comm Comm::node() const {
  MPI_Comm node = MPI_COMM_NULL;
  MARLSCHED_MPI_CHECK(
      MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node));
  return Comm(node, true);
}

double Comm::cores_per_rank() const {
  cpu_set_t mine;
  CPU_ZERO(&mine);
  // A rank that cannot read its mask still joins the allgather (with an empty mask, which
  // shares no CPU), so that its peers do not wait for it; it then counts one core.
  const bool known = sched_getaffinity(0, sizeof mine, &mine) == 0;
  if (!known) CPU_ZERO(&mine);
  const Comm local = node();
  std::vector<cpu_set_t> all(static_cast<std::size_t>(local.size()));
  MARLSCHED_MPI_CHECK(
      MPI_Allgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, local.raw()));
  if (!known) return 1.0;
  int sharing = 0;
  for (auto& other : all) {
    cpu_set_t both;
    CPU_AND(&both, &mine, &other);
    sharing += CPU_COUNT(&both) > 0 ? 1 : 0;
  }
  return static_cast<double>(CPU_COUNT(&mine)) / std::max(1, sharing);
}

void Comm::barrier() const {
  MARLSCHED_MPI_CHECK(MPI_Barrier(comm_));
}

int Comm::node_rank() const {
  return node().rank();
}

Request::~Request() {
  if (req_ == MPI_REQUEST_NULL) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Wait(&req_, MPI_STATUS_IGNORE);  // a destructor cannot report a failure
}

Request& Request::operator=(Request&& o) noexcept {
  if (this != &o) {
    this->~Request();
    req_ = o.req_;
    o.req_ = MPI_REQUEST_NULL;
  }
  return *this;
}

void Request::wait() {
  if (req_ != MPI_REQUEST_NULL) MARLSCHED_MPI_CHECK(MPI_Wait(&req_, MPI_STATUS_IGNORE));
}

void Exchange::layout(const std::vector<std::size_t>& bytes) {
  const std::size_t n = bytes.size();
  scount.resize(n);
  sdispl.resize(n);
  std::size_t total = 0;
  for (std::size_t r = 0; r < n; ++r) {
    MARLSCHED_CHECK(bytes[r] < static_cast<std::size_t>(std::numeric_limits<int>::max()),
                    "alltoallv message to rank " << r << " exceeds 2 GiB");
    scount[r] = static_cast<int>(bytes[r]);
    sdispl[r] = static_cast<int>(total);
    total += bytes[r];
    MARLSCHED_CHECK(total < static_cast<std::size_t>(std::numeric_limits<int>::max()),
                    "alltoallv send volume exceeds 2 GiB");
  }
  send.resize(total);
}

void Comm::alltoallv(Exchange& x) const {
  MARLSCHED_CHECK(
      static_cast<int>(x.scount.size()) == size_ && static_cast<int>(x.sdispl.size()) == size_,
      "alltoallv needs one section per rank, got " << x.scount.size());
  x.rcount.resize(static_cast<std::size_t>(size_));
  x.rdispl.resize(static_cast<std::size_t>(size_));
  MARLSCHED_MPI_CHECK(
      MPI_Alltoall(x.scount.data(), 1, MPI_INT, x.rcount.data(), 1, MPI_INT, comm_));
  std::size_t rtotal = 0;
  for (std::size_t r = 0; r < x.rcount.size(); ++r) {
    x.rdispl[r] = static_cast<int>(rtotal);
    rtotal += static_cast<std::size_t>(x.rcount[r]);
  }
  MARLSCHED_CHECK(rtotal < static_cast<std::size_t>(std::numeric_limits<int>::max()),
                  "alltoallv receive volume exceeds 2 GiB");
  x.recv.resize(rtotal);
  MARLSCHED_MPI_CHECK(MPI_Alltoallv(x.send.data(), x.scount.data(), x.sdispl.data(), MPI_BYTE,
                                    x.recv.data(), x.rcount.data(), x.rdispl.data(), MPI_BYTE,
                                    comm_));
}

void Comm::allgatherv(const std::vector<std::byte>& send, std::vector<std::byte>& recv,
                      std::vector<int>& displs) const {
  MARLSCHED_CHECK(send.size() < static_cast<std::size_t>(std::numeric_limits<int>::max()),
                  "allgatherv message exceeds 2 GiB");
  const int mine = static_cast<int>(send.size());
  std::vector<int> counts(static_cast<std::size_t>(size_));
  MARLSCHED_MPI_CHECK(MPI_Allgather(&mine, 1, MPI_INT, counts.data(), 1, MPI_INT, comm_));
  displs.assign(static_cast<std::size_t>(size_) + 1, 0);
  std::size_t total = 0;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    total += static_cast<std::size_t>(counts[r]);
    MARLSCHED_CHECK(total < static_cast<std::size_t>(std::numeric_limits<int>::max()),
                    "allgatherv receive volume exceeds 2 GiB");
    displs[r + 1] = static_cast<int>(total);
  }
  recv.resize(total);
  MARLSCHED_MPI_CHECK(MPI_Allgatherv(send.data(), mine, MPI_BYTE, recv.data(), counts.data(),
                                     displs.data(), MPI_BYTE, comm_));
}

void Comm::abort(int code) const {
  MPI_Abort(comm_ == MPI_COMM_NULL ? MPI_COMM_WORLD : comm_, code);
  std::_Exit(code);
}

}  // namespace marlsched::dist
