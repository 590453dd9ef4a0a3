// ring.cpp: a C++ program over knit's C API (mpi.h), built with knitc++.
// A class owns a duplicated communicator (RAII); a templated helper maps
// C++ types to MPI datatypes; each rank passes a block of values around
// the ring, adding its rank to every element as it goes, then a
// reduction of std::complex<double> checks the sums.  Every result is
// compared with what the ring must give; a wrong one ends the job.
//
//   knitrun -n 4 build/bench/ring [elements] [laps]
// prints: ring: ranks R elements N laps L time per lap T us ... ok
#include <mpi.h>

#include <complex>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

template <typename T> MPI_Datatype mpi_type();
template <> MPI_Datatype mpi_type<long long>() { return MPI_LONG_LONG; }
template <> MPI_Datatype mpi_type<double>() { return MPI_DOUBLE; }
template <> MPI_Datatype mpi_type<std::complex<double>>() { return MPI_CXX_DOUBLE_COMPLEX; }
template <> MPI_Datatype mpi_type<bool>() { return MPI_CXX_BOOL; }

void ok_or_throw(int err, const char *what)
{
    if (err == MPI_SUCCESS)
        return;
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(err, msg, &len);
    throw std::runtime_error(std::string(what) + ": " + std::string(msg, static_cast<size_t>(len)));
}

class Ring {
  public:
    explicit Ring(MPI_Comm parent)
    {
        ok_or_throw(MPI_Comm_dup(parent, &comm_), "MPI_Comm_dup");
        MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
        MPI_Comm_rank(comm_, &rank_);
        MPI_Comm_size(comm_, &size_);
    }
    ~Ring() { MPI_Comm_free(&comm_); }
    Ring(const Ring &) = delete;
    Ring &operator=(const Ring &) = delete;

    int rank() const { return rank_; }
    int size() const { return size_; }

    // one lap: every rank's block travels all the way around; each rank
    // adds its rank to every element on the way
    template <typename T> void lap(std::vector<T> &block) const
    {
        std::vector<T> in(block.size());
        const int right = (rank_ + 1) % size_, left = (rank_ + size_ - 1) % size_;
        for (int step = 0; step < size_; step++) {
            ok_or_throw(MPI_Sendrecv(block.data(), static_cast<int>(block.size()), mpi_type<T>(), right, step,
                                     in.data(), static_cast<int>(in.size()), mpi_type<T>(), left, step, comm_,
                                     MPI_STATUS_IGNORE),
                        "MPI_Sendrecv");
            for (auto &v : in)
                v += static_cast<T>(rank_);
            block.swap(in);
        }
    }

    template <typename T> T sum(T v) const
    {
        T r{};
        ok_or_throw(MPI_Allreduce(&v, &r, 1, mpi_type<T>(), MPI_SUM, comm_), "MPI_Allreduce");
        return r;
    }

    bool all(bool v) const
    {
        bool r = false;
        ok_or_throw(MPI_Allreduce(&v, &r, 1, mpi_type<bool>(), MPI_LAND, comm_), "MPI_Allreduce");
        return r;
    }

  private:
    MPI_Comm comm_ = MPI_COMM_NULL;
    int rank_ = 0, size_ = 1;
};

} // namespace

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rc = 0;
    try {
        const long n = argc > 1 ? std::atol(argv[1]) : 4096;
        const int laps = argc > 2 ? std::atoi(argv[2]) : 20;
        if (n < 1 || laps < 1)
            throw std::invalid_argument("usage: ring [elements >= 1] [laps >= 1]");
        Ring ring(MPI_COMM_WORLD);
        const int p = ring.size(), me = ring.rank();
        std::vector<long long> block(static_cast<size_t>(n));
        std::iota(block.begin(), block.end(), static_cast<long long>(me) * n);
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = MPI_Wtime();
        for (int l = 0; l < laps; l++)
            ring.lap(block);
        const double t = MPI_Wtime() - t0;
        // back home after each lap, every element grew by 0 + 1 + ... + p-1
        const long long grown = static_cast<long long>(laps) * p * (p - 1) / 2;
        bool good = true;
        for (long i = 0; i < n; i++)
            good = good && block[static_cast<size_t>(i)] == static_cast<long long>(me) * n + i + grown;
        std::vector<double> d(8, 0.5);
        ring.lap(d);
        good = good && d[7] == 0.5 + p * (p - 1) / 2.0;
        const std::complex<double> z = ring.sum(std::complex<double>(me, 1.0));
        good = good && z == std::complex<double>(p * (p - 1) / 2.0, p);
        good = ring.all(good);
        if (me == 0)
            std::printf("ring: ranks %d elements %ld laps %d time per lap %.2f us complex sum (%g,%g) %s\n", p, n,
                        laps, 1e6 * t / laps, z.real(), z.imag(), good ? "ok" : "WRONG");
        rc = good ? 0 : 1;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "ring: %s\n", e.what());
        rc = 1;
    }
    if (rc)
        MPI_Abort(MPI_COMM_WORLD, rc);
    MPI_Finalize();
    return 0;
}
