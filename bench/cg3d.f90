! cg3d: conjugate gradient on the 3-D Poisson problem (7-point Laplacian,
! zero boundary), the communication of NAS CG in its simplest form: every
! iteration one matrix-vector product with a halo exchange of the planes
! between ranks (slabs along z: MPI_Sendrecv up and down) and two dot
! products (MPI_Allreduce of one double each), plus the vector updates.
! Written for knit's benchmarks (issue 29), not taken from NAS.
!
!   cg3d N ITERS     an N^3 grid split in slabs (N a multiple of the ranks)
!
! The right-hand side is A*x_true for x_true(i,j,k) = a smooth function,
! so the exact answer is known.  Checks: the residual norm decreases as it
! must (the recurrence's residual equals b - A*x recomputed at the end, to
! 1e-8 relative), and after ITERS iterations the solution agrees with
! x_true as far as the residual says.  Prints
!   cg3d: ranks 4 grid 32^3 iterations 100 time per iteration 41.2 us residual 1.2e-05 ... ok
program cg3d
  use mpi
  implicit none
  integer :: n, iters, nz, rank, nprocs, ierr, it, k0
  integer :: up, down
  double precision, allocatable :: x(:,:,:), r(:,:,:), p(:,:,:), q(:,:,:), b(:,:,:), xt(:,:,:)
  double precision :: rho, rho0, alpha, beta, pq, t0, t1, tmax, res, res_true, err, errmax
  double precision :: rnorm0
  character(len=32) :: arg

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  n = 32
  iters = 100
  if (command_argument_count() >= 1) then
    call get_command_argument(1, arg)
    read (arg, *) n
  end if
  if (command_argument_count() >= 2) then
    call get_command_argument(2, arg)
    read (arg, *) iters
  end if
  if (mod(n, nprocs) /= 0 .or. n < 2 * nprocs .or. iters < 1) then
    if (rank == 0) print '(a,i0,a,i0,a)', 'cg3d: N (', n, ') must be a multiple of the ranks (', nprocs, &
      ') and at least twice it; ITERS at least 1'
    call MPI_Abort(MPI_COMM_WORLD, 2, ierr)
  end if
  nz = n / nprocs
  k0 = rank * nz
  up = rank + 1
  down = rank - 1
  if (up == nprocs) up = MPI_PROC_NULL
  if (down < 0) down = MPI_PROC_NULL
  ! planes 0 and nz+1 hold the neighbours' (or the zero boundary)
  allocate (x(n, n, 0:nz + 1), r(n, n, 0:nz + 1), p(n, n, 0:nz + 1), q(n, n, 0:nz + 1), &
            b(n, n, 0:nz + 1), xt(n, n, 0:nz + 1))
  call exact(xt)
  call apply(xt, b)          ! b = A x_true
  x = 0
  r = b
  p = r
  rho = dot(r, r)
  rho0 = rho
  rnorm0 = sqrt(rho0)

  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  t0 = MPI_Wtime()
  do it = 1, iters
    call apply(p, q)
    pq = dot(p, q)
    alpha = rho / pq
    x(:, :, 1:nz) = x(:, :, 1:nz) + alpha * p(:, :, 1:nz)
    r(:, :, 1:nz) = r(:, :, 1:nz) - alpha * q(:, :, 1:nz)
    rho0 = rho
    rho = dot(r, r)
    if (rho > rho0 * 1.000001d0 .and. it > 1 .and. rho > 1d-24 * rnorm0**2) then
      ! CG's residual may rise a little, but not without bound
      if (rho > 100 * rho0) call fail('the residual grew a hundredfold in one iteration')
    end if
    beta = rho / rho0
    p(:, :, 1:nz) = r(:, :, 1:nz) + beta * p(:, :, 1:nz)
  end do
  t1 = MPI_Wtime() - t0
  call MPI_Allreduce(t1, tmax, 1, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, ierr)

  ! the recurrence's residual against b - A x, and the error against x_true
  res = sqrt(rho)
  call apply(x, q)
  q(:, :, 1:nz) = b(:, :, 1:nz) - q(:, :, 1:nz)
  res_true = sqrt(dot(q, q))
  err = maxval(abs(x(:, :, 1:nz) - xt(:, :, 1:nz)))
  call MPI_Allreduce(err, errmax, 1, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, ierr)
  if (.not. (res < rnorm0)) call fail('the residual did not decrease')
  if (abs(res - res_true) > 1d-8 * rnorm0 + 1d-6 * res_true) call fail('recurrence and true residual disagree')
  ! the error is bounded by the residual over the smallest eigenvalue
  ! of A (about 3 pi^2 / (n+1)^2): a loose bound, checked loosely
  if (errmax > 10 * res_true * (n + 1)**2 / 29.6d0 + 1d-12) call fail('the solution is further off than its residual')
  if (rank == 0) print '(a,i0,a,i0,a,i0,a,f0.1,a,es9.2,a,es9.2,a)', 'cg3d: ranks ', nprocs, ' grid ', n, &
    '^3 iterations ', iters, ' time per iteration ', 1d6 * tmax / iters, ' us residual ', res / rnorm0, &
    ' error ', errmax, ' ok'
  call MPI_Finalize(ierr)

contains

  subroutine exact(v)
    double precision, intent(out) :: v(n, n, 0:nz + 1)
    integer :: i, j, k
    double precision :: h
    h = 1d0 / (n + 1)
    v = 0
    do k = 1, nz
      do j = 1, n
        do i = 1, n
          v(i, j, k) = sin(3.14159265358979d0 * i * h) * sin(3.14159265358979d0 * j * h) * &
                       (1 + (k0 + k) * h) * (2 - (k0 + k) * h) + 0.25d0 * cos(7d0 * (i + 2 * j + 3 * (k0 + k)) * h)
        end do
      end do
    end do
  end subroutine exact

  ! w = A v, A the 7-point Laplacian (6 on the diagonal, -1 to each
  ! neighbour, zero outside the grid): v's boundary planes first
  subroutine apply(v, w)
    double precision, intent(inout) :: v(n, n, 0:nz + 1)
    double precision, intent(out) :: w(n, n, 0:nz + 1)
    integer :: i, j, k, st(MPI_STATUS_SIZE), e
    call MPI_Sendrecv(v(:, :, nz), n * n, MPI_DOUBLE_PRECISION, up, 1, v(:, :, 0), n * n, &
                      MPI_DOUBLE_PRECISION, down, 1, MPI_COMM_WORLD, st, e)
    call MPI_Sendrecv(v(:, :, 1), n * n, MPI_DOUBLE_PRECISION, down, 2, v(:, :, nz + 1), n * n, &
                      MPI_DOUBLE_PRECISION, up, 2, MPI_COMM_WORLD, st, e)
    if (down == MPI_PROC_NULL) v(:, :, 0) = 0
    if (up == MPI_PROC_NULL) v(:, :, nz + 1) = 0
    w = 0
    do k = 1, nz
      do j = 1, n
        do i = 1, n
          w(i, j, k) = 6 * v(i, j, k) - v(i, j, k - 1) - v(i, j, k + 1)
          if (j > 1) w(i, j, k) = w(i, j, k) - v(i, j - 1, k)
          if (j < n) w(i, j, k) = w(i, j, k) - v(i, j + 1, k)
          if (i > 1) w(i, j, k) = w(i, j, k) - v(i - 1, j, k)
          if (i < n) w(i, j, k) = w(i, j, k) - v(i + 1, j, k)
        end do
      end do
    end do
  end subroutine apply

  double precision function dot(u, v)
    double precision, intent(in) :: u(n, n, 0:nz + 1), v(n, n, 0:nz + 1)
    double precision :: s
    integer :: e
    s = sum(u(:, :, 1:nz) * v(:, :, 1:nz))
    call MPI_Allreduce(s, dot, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, e)
  end function dot

  subroutine fail(why)
    character(len=*), intent(in) :: why
    integer :: e
    print '(a,i0,a,a)', 'cg3d: rank ', rank, ': check failed: ', why
    call MPI_Abort(MPI_COMM_WORLD, 1, e)
  end subroutine fail

end program cg3d
