! stencil3d.f90: a 3-D Jacobi stencil with halo exchange, the shape of the
! NAS BT/SP/LU communication.  The N^3 interior of a grid (the face x = 0
! held at 1, the other faces at 0) is decomposed over the ranks on a
! Cartesian grid of processes (MPI_Dims_create, MPI_Cart_create,
! MPI_Cart_shift); each iteration exchanges the six faces of every block
! (packed, MPI_Irecv/MPI_Isend/MPI_Waitall), sweeps the 7-point stencil and
! sums the squared change over all ranks (MPI_Allreduce): the residual.
!
! After the timed iterations rank 0 runs the same iterations serially on
! the whole grid and compares: every point of every rank's block (sent to
! rank 0) and the residual of every iteration.  A difference ends the job.
!
!   knitrun -n 4 build/bench/stencil3d [N] [iterations]      (default 64 40)
! prints, on rank 0:
!   stencil3d: ranks 4 grid 64^3 dims 2x2x1 iterations 40 time per iteration 812.3 us ...
!   ... residual 1.234E-01 vs serial: points 0.0E+00 residuals 1.2E-15 ok
program stencil3d
  use mpi
  implicit none
  integer :: ierr, rank, nproc, n, iters, cart, it, d, r, lo(3), ln(3), dims(3), coords(3)
  integer :: nbr(2, 3)
  logical :: periods(3)
  double precision, allocatable :: u(:, :, :, :), hist(:), serial(:, :, :, :), shist(:)
  double precision :: t0, t, tmax, res, maxdiff, resdiff
  logical :: good
  character(len=32) :: arg
  integer :: cur

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nproc, ierr)
  n = 64
  iters = 40
  if (command_argument_count() >= 1) then
    call get_command_argument(1, arg)
    read (arg, *) n
  end if
  if (command_argument_count() >= 2) then
    call get_command_argument(2, arg)
    read (arg, *) iters
  end if
  if (n < 2 .or. iters < 1) then
    if (rank == 0) print '(a)', 'usage: stencil3d [N >= 2] [iterations >= 1]'
    call MPI_Abort(MPI_COMM_WORLD, 2, ierr)
  end if

  dims = 0
  call MPI_Dims_create(nproc, 3, dims, ierr)
  periods = .false.
  call MPI_Cart_create(MPI_COMM_WORLD, 3, dims, periods, .false., cart, ierr)
  call MPI_Cart_coords(cart, rank, 3, coords, ierr)
  do d = 1, 3
    call MPI_Cart_shift(cart, d - 1, 1, nbr(1, d), nbr(2, d), ierr)
    call block_of(n, dims(d), coords(d), lo(d), ln(d))
    if (ln(d) < 1) then
      if (rank == 0) print '(a)', 'stencil3d: N is too small for this many ranks'
      call MPI_Abort(MPI_COMM_WORLD, 2, ierr)
    end if
  end do

  allocate (u(0:ln(1) + 1, 0:ln(2) + 1, 0:ln(3) + 1, 0:1), hist(iters))
  call init_block(u, lo)
  cur = 0
  call MPI_Barrier(cart, ierr)
  t0 = MPI_Wtime()
  do it = 1, iters
    call exchange(u(:, :, :, cur), ln, nbr, cart)
    call sweep(u(:, :, :, cur), u(:, :, :, 1 - cur), ln, res)
    call MPI_Allreduce(MPI_IN_PLACE, res, 1, MPI_DOUBLE_PRECISION, MPI_SUM, cart, ierr)
    hist(it) = res
    cur = 1 - cur
  end do
  t = MPI_Wtime() - t0
  call MPI_Reduce(t, tmax, 1, MPI_DOUBLE_PRECISION, MPI_MAX, 0, cart, ierr)

  ! the serial run on rank 0, and every block compared with it
  maxdiff = 0
  if (rank == 0) then
    allocate (serial(0:n + 1, 0:n + 1, 0:n + 1, 0:1), shist(iters))
    call init_block(serial, [0, 0, 0])
    do it = 1, iters
      call sweep(serial(:, :, :, mod(it - 1, 2)), serial(:, :, :, mod(it, 2)), [n, n, n], shist(it))
    end do
    do r = 0, nproc - 1
      call compare_block(r)
    end do
    ! points are computed as in the serial run: equal; the residuals are
    ! sums in another order: equal to rounding
    resdiff = maxval(abs(hist - shist) / max(shist, 1d-300))
    good = maxdiff == 0 .and. resdiff <= 1d-10
    print '(a,i0,a,i0,a,i0,a,i0,a,i0,a,i0,a,f10.2,a,es10.3,a,es8.1,a,es8.1,a)', 'stencil3d: ranks ', nproc, &
      ' grid ', n, '^3 dims ', dims(1), 'x', dims(2), 'x', dims(3), ' iterations ', iters, &
      ' time per iteration ', 1d6 * tmax / iters, ' us residual ', hist(iters), ' vs serial: points ', maxdiff, &
      ' residuals ', resdiff, merge(' ok   ', ' WRONG', good)
    if (.not. good) call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
  else
    call MPI_Send([lo, ln], 6, MPI_INTEGER, 0, 1, cart, ierr)
    call MPI_Send(u(1:ln(1), 1:ln(2), 1:ln(3), cur), product(ln), MPI_DOUBLE_PRECISION, 0, 2, cart, ierr)
  end if
  call MPI_Comm_free(cart, ierr)
  call MPI_Finalize(ierr)

contains

  ! the part of n points that process c of p owns: from lo + 1, ln points
  subroutine block_of(n, p, c, lo, ln)
    integer, intent(in) :: n, p, c
    integer, intent(out) :: lo, ln
    ln = n / p + merge(1, 0, c < mod(n, p))
    lo = c * (n / p) + min(c, mod(n, p))
  end subroutine

  ! zero inside; the global face x = 0 at 1 (in both copies: halos on the
  ! grid's faces are never overwritten)
  subroutine init_block(a, lo)
    integer, intent(in) :: lo(3)
    double precision, intent(out) :: a(0:, 0:, 0:, 0:)
    a = 0
    if (lo(1) == 0) a(0, :, :, :) = 1
  end subroutine

  subroutine sweep(a, b, ln, res)
    integer, intent(in) :: ln(3)
    double precision, intent(in) :: a(0:, 0:, 0:)
    double precision, intent(inout) :: b(0:, 0:, 0:)
    double precision, intent(out) :: res
    integer :: i, j, k
    double precision :: v
    res = 0
    do k = 1, ln(3)
      do j = 1, ln(2)
        do i = 1, ln(1)
          v = (a(i - 1, j, k) + a(i + 1, j, k) + a(i, j - 1, k) + a(i, j + 1, k) + a(i, j, k - 1) &
               + a(i, j, k + 1)) / 6d0
          res = res + (v - a(i, j, k))**2
          b(i, j, k) = v
        end do
      end do
    end do
  end subroutine

  ! the six faces: packed, all twelve messages at once, unpacked
  subroutine exchange(a, ln, nbr, comm)
    integer, intent(in) :: ln(3), nbr(2, 3), comm
    double precision, intent(inout) :: a(0:, 0:, 0:)
    double precision, allocatable, save, asynchronous :: sbuf(:, :, :), rbuf(:, :, :)
    integer :: req(12), sts(MPI_STATUS_SIZE, 12), fsize(3), d, s, nr, ierr
    fsize = [ln(2) * ln(3), ln(1) * ln(3), ln(1) * ln(2)]
    if (.not. allocated(sbuf)) allocate (sbuf(maxval(fsize), 2, 3), rbuf(maxval(fsize), 2, 3))
    nr = 0
    do d = 1, 3
      do s = 1, 2
        if (nbr(s, d) == MPI_PROC_NULL) cycle
        nr = nr + 1
        call MPI_Irecv(rbuf(1, s, d), fsize(d), MPI_DOUBLE_PRECISION, nbr(s, d), 10 * d + 3 - s, comm, &
                       req(nr), ierr)
      end do
    end do
    do d = 1, 3
      do s = 1, 2
        if (nbr(s, d) == MPI_PROC_NULL) cycle
        call pack_face(a, ln, d, merge(1, ln(d), s == 1), sbuf(:, s, d))
        nr = nr + 1
        call MPI_Isend(sbuf(1, s, d), fsize(d), MPI_DOUBLE_PRECISION, nbr(s, d), 10 * d + s, comm, req(nr), ierr)
      end do
    end do
    call MPI_Waitall(nr, req, sts, ierr)
    do d = 1, 3
      do s = 1, 2
        if (nbr(s, d) /= MPI_PROC_NULL) call unpack_face(a, ln, d, merge(0, ln(d) + 1, s == 1), rbuf(:, s, d))
      end do
    end do
  end subroutine

  subroutine pack_face(a, ln, d, at, buf)
    double precision, intent(in) :: a(0:, 0:, 0:)
    integer, intent(in) :: ln(3), d, at
    double precision, intent(out) :: buf(:)
    select case (d)
    case (1)
      buf(1:ln(2) * ln(3)) = reshape(a(at, 1:ln(2), 1:ln(3)), [ln(2) * ln(3)])
    case (2)
      buf(1:ln(1) * ln(3)) = reshape(a(1:ln(1), at, 1:ln(3)), [ln(1) * ln(3)])
    case default
      buf(1:ln(1) * ln(2)) = reshape(a(1:ln(1), 1:ln(2), at), [ln(1) * ln(2)])
    end select
  end subroutine

  subroutine unpack_face(a, ln, d, at, buf)
    double precision, intent(inout) :: a(0:, 0:, 0:)
    integer, intent(in) :: ln(3), d, at
    double precision, intent(in) :: buf(:)
    select case (d)
    case (1)
      a(at, 1:ln(2), 1:ln(3)) = reshape(buf(1:ln(2) * ln(3)), [ln(2), ln(3)])
    case (2)
      a(1:ln(1), at, 1:ln(3)) = reshape(buf(1:ln(1) * ln(3)), [ln(1), ln(3)])
    case default
      a(1:ln(1), 1:ln(2), at) = reshape(buf(1:ln(1) * ln(2)), [ln(1), ln(2)])
    end select
  end subroutine

  ! rank r's block (rank 0's own, or received) against the serial grid
  subroutine compare_block(r)
    integer, intent(in) :: r
    integer :: geo(6), st(MPI_STATUS_SIZE), cnt
    double precision, allocatable :: blk(:, :, :)
    if (r == 0) then
      geo = [lo, ln]
      blk = u(1:ln(1), 1:ln(2), 1:ln(3), cur)
    else
      call MPI_Recv(geo, 6, MPI_INTEGER, r, 1, cart, st, ierr)
      allocate (blk(geo(4), geo(5), geo(6)))
      call MPI_Recv(blk, size(blk), MPI_DOUBLE_PRECISION, r, 2, cart, st, ierr)
      call MPI_Get_count(st, MPI_DOUBLE_PRECISION, cnt, ierr)
      if (cnt /= size(blk)) maxdiff = huge(1d0)
    end if
    maxdiff = max(maxdiff, maxval(abs(blk - serial(geo(1) + 1:geo(1) + geo(4), geo(2) + 1:geo(2) + geo(5), &
                                                 geo(3) + 1:geo(3) + geo(6), mod(iters, 2)))))
  end subroutine

end program stencil3d
