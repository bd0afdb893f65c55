#pragma once
/// \file comm.hpp
/// MPI runtime: an RAII session, a communicator, and the three collectives the trainer needs
/// (observation allgather, forwarded-work alltoallv, flattened allreduce). Every MPI call goes
/// through MARLSCHED_MPI_CHECK on a communicator whose error handler is MPI_ERRORS_RETURN, so
/// an MPI failure becomes a `marlsched::MpiError` with context, which `main` turns into one
/// message and an MPI_Abort (no rank is left waiting in a collective).

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace marlsched::dist {

/// Throws MpiError with MPI's own error string and the failing call.
void throw_mpi_error(int code, const char* call, const char* file, int line);

#define MARLSCHED_MPI_CHECK(call)                                                   \
  do {                                                                              \
    const int marlsched_rc_ = (call);                                               \
    if (marlsched_rc_ != MPI_SUCCESS)                                               \
      ::marlsched::dist::throw_mpi_error(marlsched_rc_, #call, __FILE__, __LINE__); \
  } while (0)

/// MPI datatype for a C++ arithmetic type.
template <class T>
MPI_Datatype mpi_type();
template <>
inline MPI_Datatype mpi_type<char>() {
  return MPI_CHAR;
}
template <>
inline MPI_Datatype mpi_type<float>() {
  return MPI_FLOAT;
}
template <>
inline MPI_Datatype mpi_type<double>() {
  return MPI_DOUBLE;
}
template <>
inline MPI_Datatype mpi_type<int>() {
  return MPI_INT;
}
template <>
inline MPI_Datatype mpi_type<std::int64_t>() {
  return MPI_INT64_T;
}
template <>
inline MPI_Datatype mpi_type<std::uint64_t>() {
  return MPI_UINT64_T;
}

/// Initialises MPI on construction and finalises it on destruction, unless MPI was already
/// initialised by someone else. It asks for MPI_THREAD_MULTIPLE, which the trajectory writer's
/// background thread needs (it makes MPI-IO calls while the training thread makes collectives);
/// with less, that writer runs on the training thread. Also sets libtorch-free process defaults.
/// Whether MPI was initialised with MPI_THREAD_MULTIPLE: any thread may call MPI at any time.
bool thread_multiple();

class Session {
 public:
  Session(int* argc, char*** argv);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

 private:
  bool owns_ = false;
};

/// The buffers of a packed all-to-all, kept between calls so that a warm exchange allocates
/// nothing. The sender sizes the sections with layout(), writes the bytes for rank r at
/// send.data() + sdispl[r], and calls Comm::alltoallv; then what rank r sent here is
/// recv.data() + rdispl[r], rcount[r] bytes.
struct Exchange {
  /// Sizes the send sections: bytes[r] for rank r, packed in rank order.
  void layout(const std::vector<std::size_t>& bytes);
  std::vector<std::byte> send, recv;
  std::vector<int> scount, sdispl, rcount, rdispl;
};

/// A nonblocking operation in flight (MPI_Request), owned: wait() completes it, and the
/// destructor waits for one still active, so MPI never writes into freed memory (unless MPI is
/// already finalized, when nothing can be in flight). Move-only.
class Request {
 public:
  Request() = default;
  ~Request();
  Request(Request&& o) noexcept : req_(o.req_) { o.req_ = MPI_REQUEST_NULL; }
  Request& operator=(Request&& o) noexcept;
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;
  /// Whether an operation is in flight.
  bool active() const { return req_ != MPI_REQUEST_NULL; }
  /// Completes the operation (no-op when none is in flight); throws MpiError on failure.
  void wait();
  /// For the MPI call that starts the operation.
  MPI_Request* handle() { return &req_; }

 private:
  MPI_Request req_ = MPI_REQUEST_NULL;
};

/// A communicator handle (not owning MPI_COMM_WORLD; owning duplicates made by `dup()`).
class Comm {
 public:
  /// The world communicator, duplicated so that our error handler is ours alone.
  static Comm world();
  Comm() = default;
  explicit Comm(MPI_Comm c, bool owned);
  ~Comm();
  Comm(Comm&& o) noexcept;
  Comm& operator=(Comm&& o) noexcept;
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  /// Collective: a new communicator over the same ranks (MPI_Comm_dup), for traffic that must
  /// not mix with this one's, e.g. from another thread.
  Comm dup() const;

  int rank() const { return rank_; }
  /// This rank's index among the ranks on its node (MPI_COMM_TYPE_SHARED); collective.
  int node_rank() const;
  /// Collective: the ranks of this communicator that share this one's node (memory), as their
  /// own communicator (MPI_Comm_split_type, shared), ordered as here.
  Comm node() const;
  /// Collective: the CPUs this rank may run on (its affinity mask) divided by the ranks of its
  /// node whose masks share any of them. 1 for ranks bound to one core each; 0.5 for four
  /// unbound ranks on two cores.
  double cores_per_rank() const;
  int size() const { return size_; }
  bool is_root() const { return rank_ == 0; }
  MPI_Comm raw() const { return comm_; }

  void barrier() const;
  /// Every rank sends `count` items; `recv` receives size()*count items in rank order.
  template <class T>
  void allgather(const T* send, int count, T* recv) const {
    MARLSCHED_MPI_CHECK(
        MPI_Allgather(send, count, mpi_type<T>(), recv, count, mpi_type<T>(), comm_));
  }
  /// In-place elementwise sum over ranks.
  template <class T>
  void allreduce_sum(T* data, int count) const {
    MARLSCHED_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, data, count, mpi_type<T>(), MPI_SUM, comm_));
  }
  /// Starts an in-place elementwise sum over ranks (MPI_Iallreduce); `data` must stay alive
  /// until the returned request completes (Request::wait, or its destructor).
  template <class T>
  Request iallreduce_sum(T* data, int count) const {
    Request req;
    MARLSCHED_MPI_CHECK(
        MPI_Iallreduce(MPI_IN_PLACE, data, count, mpi_type<T>(), MPI_SUM, comm_, req.handle()));
    return req;
  }
  /// In-place elementwise maximum over ranks.
  template <class T>
  void allreduce_max(T* data, int count) const {
    MARLSCHED_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, data, count, mpi_type<T>(), MPI_MAX, comm_));
  }
  template <class T>
  T allreduce_max(T v) const {
    MARLSCHED_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &v, 1, mpi_type<T>(), MPI_MAX, comm_));
    return v;
  }
  template <class T>
  T allreduce_min(T v) const {
    MARLSCHED_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &v, 1, mpi_type<T>(), MPI_MIN, comm_));
    return v;
  }
  template <class T>
  void bcast(T* data, int count, int root = 0) const {
    MARLSCHED_MPI_CHECK(MPI_Bcast(data, count, mpi_type<T>(), root, comm_));
  }
  /// Variable-size all-to-all of bytes, packed (see Exchange): one MPI_Alltoall of the counts,
  /// then one MPI_Alltoallv from and into the exchange's own buffers (no copies).
  void alltoallv(Exchange& x) const;
  /// Variable-size allgather of bytes: every rank's `send` lands in `recv`, rank after rank, and
  /// `displs` (size()+1 entries) gives where each begins (rank r's bytes are [displs[r],
  /// displs[r+1])). One MPI_Allgather of the sizes, then one MPI_Allgatherv.
  void allgatherv(const std::vector<std::byte>& send, std::vector<std::byte>& recv,
                  std::vector<int>& displs) const;

  /// Aborts every rank of the job with `code`.
  [[noreturn]] void abort(int code) const;

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  bool owned_ = false;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace marlsched::dist
