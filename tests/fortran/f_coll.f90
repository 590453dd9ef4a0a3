! Every collective with Fortran types and ops through `use mpi`, at any
! number of ranks: INTEGER, REAL, DOUBLE PRECISION, COMPLEX, DOUBLE
! COMPLEX, LOGICAL, CHARACTER, 2INTEGER and 2DOUBLE_PRECISION pairs, MPI_IN_PLACE,
! a user op written in Fortran, nonblocking forms.  Results are compared
! with values computed here; a wrong one ends the job (MPI_Abort).
module f_coll_ops
contains
  ! a non-commutative user op on pairs (digits, 10**number of digits):
  ! the concatenation of the digits, in rank order
  subroutine digits(invec, inoutvec, n, dtype)
    integer :: n, dtype
    integer :: invec(2, n), inoutvec(2, n)
    inoutvec(1, :) = invec(1, :) * inoutvec(2, :) + inoutvec(1, :)
    inoutvec(2, :) = invec(2, :) * inoutvec(2, :)
  end subroutine
end module

program f_coll
  use mpi
  use f_coll_ops
  implicit none
  integer :: ierr, rank, nproc, root, i, r, op, req
  integer :: ival(3), ires(3), iall(64), counts(16), displs(16), pair(2, 2), pres(2, 2)
  real :: rval(2), rres(2)
  double precision :: dval(2), dres(2), dpair(2), dpres(2)
  complex :: cval, cres
  double complex :: zval(2), zres(2)
  logical :: lval(3), lres(3)
  character(len=8) :: word
  integer :: expect_prod, sendv(16)

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nproc, ierr)
  call check(nproc <= 16, 'at most 16 ranks')
  root = nproc - 1

  ! Bcast: INTEGER and CHARACTER
  ival = -1
  word = '        '
  if (rank == root) then
    ival = [7, 8, 9]
    word = 'knit-f90'
  end if
  call MPI_Bcast(ival, 3, MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
  call MPI_Bcast(word, 8, MPI_CHARACTER, root, MPI_COMM_WORLD, ierr)
  call check(all(ival == [7, 8, 9]) .and. word == 'knit-f90', 'Bcast')

  ! reductions of every Fortran type
  ival = [rank + 1, -rank, 2]
  call MPI_Allreduce(ival, ires, 3, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(all(ires == [nproc * (nproc + 1) / 2, -nproc * (nproc - 1) / 2, 2 * nproc]), 'INTEGER SUM')
  call MPI_Allreduce(ival, ires, 3, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD, ierr)
  call check(all(ires == [nproc, 0, 2]), 'INTEGER MAX')
  call MPI_Allreduce(ival, ires, 3, MPI_INTEGER, MPI_MIN, MPI_COMM_WORLD, ierr)
  call check(all(ires == [1, 1 - nproc, 2]), 'INTEGER MIN')
  call MPI_Allreduce(ival(3), ires(3), 1, MPI_INTEGER, MPI_PROD, MPI_COMM_WORLD, ierr)
  expect_prod = 2**nproc
  call check(ires(3) == expect_prod, 'INTEGER PROD')
  call MPI_Allreduce(ival(1), ires(1), 1, MPI_INTEGER, MPI_BXOR, MPI_COMM_WORLD, ierr)
  call check(ires(1) == bxor_upto(nproc), 'INTEGER BXOR')

  rval = [real(rank) * 0.5, 1.0]
  call MPI_Allreduce(rval, rres, 2, MPI_REAL, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(rres(1) == 0.25 * nproc * (nproc - 1) .and. rres(2) == nproc, 'REAL SUM')
  dval = [dble(rank), 1.5d0]
  call MPI_Reduce(dval, dres, 2, MPI_DOUBLE_PRECISION, MPI_MAX, root, MPI_COMM_WORLD, ierr)
  if (rank == root) call check(dres(1) == nproc - 1 .and. dres(2) == 1.5d0, 'DOUBLE PRECISION MAX (Reduce)')
  dval = [dble(rank + 1), 2d0]
  call MPI_Allreduce(dval, dres, 2, MPI_DOUBLE_PRECISION, MPI_PROD, MPI_COMM_WORLD, ierr)
  call check(dres(1) == product([(dble(r), r = 1, nproc)]) .and. dres(2) == 2d0**nproc, 'DOUBLE PRECISION PROD')

  cval = cmplx(real(rank), 1.0)
  call MPI_Allreduce(cval, cres, 1, MPI_COMPLEX, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(cres == cmplx(0.5 * nproc * (nproc - 1), real(nproc)), 'COMPLEX SUM')
  zval = [dcmplx(0d0, 1d0), dcmplx(dble(rank), 0d0)]
  call MPI_Allreduce(zval, zres, 2, MPI_DOUBLE_COMPLEX, MPI_PROD, MPI_COMM_WORLD, ierr)
  ! i**nproc, and 0 when rank 0 takes part
  call check(zres(1) == (0d0, 1d0)**nproc .and. zres(2) == (0d0, 0d0), 'DOUBLE COMPLEX PROD')
  call MPI_Allreduce(MPI_IN_PLACE, zval, 2, MPI_DOUBLE_COMPLEX, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(zval(1) == dcmplx(0d0, dble(nproc)) .and. zval(2) == dcmplx(0.5d0 * nproc * (nproc - 1), 0d0), &
             'DOUBLE COMPLEX SUM in place')

  lval = [.true., rank == 0, rank == root]
  call MPI_Allreduce(lval, lres, 3, MPI_LOGICAL, MPI_LAND, MPI_COMM_WORLD, ierr)
  call check(lres(1) .and. (lres(2) .eqv. nproc == 1) .and. (lres(3) .eqv. nproc == 1), 'LOGICAL LAND')
  call MPI_Allreduce(lval, lres, 3, MPI_LOGICAL, MPI_LOR, MPI_COMM_WORLD, ierr)
  call check(all(lres), 'LOGICAL LOR')
  call MPI_Allreduce(lval, lres, 3, MPI_LOGICAL, MPI_LXOR, MPI_COMM_WORLD, ierr)
  call check((lres(1) .eqv. mod(nproc, 2) == 1) .and. lres(2), 'LOGICAL LXOR')

  ! MAXLOC / MINLOC on pairs: the value 10 - |rank - 1|, largest at rank 1
  pair(:, 1) = [10 - abs(rank - 1), rank]
  pair(:, 2) = [mod(rank, 2), rank]
  call MPI_Allreduce(pair, pres, 2, MPI_2INTEGER, MPI_MAXLOC, MPI_COMM_WORLD, ierr)
  call check(pres(1, 1) == 10 - merge(1, 0, nproc == 1) .and. pres(2, 1) == min(1, nproc - 1), &
             '2INTEGER MAXLOC')
  call check(pres(1, 2) == merge(1, 0, nproc > 1) .and. pres(2, 2) == merge(1, 0, nproc > 1), &
             '2INTEGER MAXLOC, lowest index of the ties')
  dpair = [dble(abs(rank - 1)), dble(rank)]
  call MPI_Allreduce(dpair, dpres, 1, MPI_2DOUBLE_PRECISION, MPI_MINLOC, MPI_COMM_WORLD, ierr)
  call check(dpres(1) == merge(1d0, 0d0, nproc == 1) .and. dpres(2) == dble(min(1, nproc - 1)), &
             '2DOUBLE_PRECISION MINLOC')

  ! a user op in Fortran, not commutative: the ranks' digits in rank order
  call MPI_Op_create(digits, .false., op, ierr)
  ival(1:2) = [mod(rank, 9) + 1, 10]
  call MPI_Allreduce(ival, ires, 1, MPI_2INTEGER, op, MPI_COMM_WORLD, ierr)
  call check(ires(1) == digits_upto(nproc) .and. ires(2) == 10**nproc, 'user op in rank order')
  call MPI_Op_free(op, ierr)
  call check(op == MPI_OP_NULL, 'Op_free sets MPI_OP_NULL')

  ! Gather / Scatter / Allgather and the v forms, in place too
  iall = -1
  ival(1) = rank * 3
  call MPI_Gather(ival, 1, MPI_INTEGER, iall, 1, MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
  if (rank == root) call check(all(iall(1:nproc) == [(3 * r, r = 0, nproc - 1)]), 'Gather')
  iall = -1
  iall(rank + 1) = rank * 5
  if (rank == root) then
    call MPI_Gather(MPI_IN_PLACE, 1, MPI_INTEGER, iall, 1, MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
    call check(all(iall(1:nproc) == [(5 * r, r = 0, nproc - 1)]), 'Gather in place')
  else
    call MPI_Gather(iall(rank + 1), 1, MPI_INTEGER, ires, 1, MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
  end if
  do r = 0, nproc - 1
    counts(r + 1) = r + 1
    displs(r + 1) = r * (r + 1) / 2
  end do
  iall = -1
  sendv = rank
  call MPI_Allgatherv(sendv, rank + 1, MPI_INTEGER, iall, counts, displs, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call check(all(iall(1:nproc * (nproc + 1) / 2) == [((r, i = 0, r), r = 0, nproc - 1)]), 'Allgatherv')
  iall = -1
  iall(rank + 1) = 100 + rank
  call MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, iall, 1, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call check(all(iall(1:nproc) == [(100 + r, r = 0, nproc - 1)]), 'Allgather in place')
  if (rank == root) iall(1:nproc) = [(2 * r, r = 0, nproc - 1)]
  ires = -1
  call MPI_Scatter(iall, 1, MPI_INTEGER, ires, 1, MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
  call check(ires(1) == 2 * rank, 'Scatter')
  if (rank == root) iall(1:nproc * (nproc + 1) / 2) = [((r * 10 + i, i = 0, r), r = 0, nproc - 1)]
  ires = -1
  call MPI_Scatterv(iall, [(min(r + 1, 3), r = 0, nproc - 1)], displs, MPI_INTEGER, ires, min(rank + 1, 3), &
                    MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
  call check(ires(1) == rank * 10 .and. (rank == 0 .or. ires(2) == rank * 10 + 1), 'Scatterv')
  call MPI_Gatherv(ires, min(rank + 1, 3), MPI_INTEGER, iall, [(min(r + 1, 3), r = 0, nproc - 1)], &
                   [(3 * r, r = 0, nproc - 1)], MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
  if (rank == root) call check(all([(iall(3 * r + 1), r = 0, nproc - 1)] == [(10 * r, r = 0, nproc - 1)]), 'Gatherv')

  ! Alltoall(v), Reduce_scatter(_block), Scan, Exscan
  do r = 0, nproc - 1
    iall(r + 1) = rank * 100 + r
  end do
  call MPI_Alltoall(iall, 1, MPI_INTEGER, iall(33), 1, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call check(all(iall(33:32 + nproc) == [(r * 100 + rank, r = 0, nproc - 1)]), 'Alltoall')
  counts(1:nproc) = 1
  displs(1:nproc) = [(r, r = 0, nproc - 1)]
  call MPI_Alltoallv(iall, counts, displs, MPI_INTEGER, iall(33), counts, displs(1:nproc), MPI_INTEGER, &
                     MPI_COMM_WORLD, ierr)
  call check(all(iall(33:32 + nproc) == [(r * 100 + rank, r = 0, nproc - 1)]), 'Alltoallv')
  iall(1:nproc) = [(rank + r, r = 0, nproc - 1)]
  call MPI_Reduce_scatter_block(iall, ires, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(ires(1) == nproc * rank + nproc * (nproc - 1) / 2, 'Reduce_scatter_block')
  call MPI_Reduce_scatter(iall, ires, counts, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(ires(1) == nproc * rank + nproc * (nproc - 1) / 2, 'Reduce_scatter')
  dval(1) = rank + 1
  call MPI_Scan(dval, dres, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(dres(1) == (rank + 1) * (rank + 2) / 2, 'Scan')
  ival(1) = rank + 1
  ires(1) = -7
  call MPI_Exscan(ival, ires, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank > 0) call check(ires(1) == rank * (rank + 1) / 2, 'Exscan')

  ! nonblocking: Iallreduce and Ibcast completed by Wait
  dval(1) = 1d0
  call MPI_Iallreduce(MPI_IN_PLACE, dval, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, req, ierr)
  call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
  call check(dval(1) == nproc .and. req == MPI_REQUEST_NULL, 'Iallreduce')
  call MPI_Ibarrier(MPI_COMM_WORLD, req, ierr)
  call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)

  call MPI_Finalize(ierr)
  if (rank == 0) print '(a)', 'ok f_coll'

contains

  include 'check.inc'

  integer function bxor_upto(n)
    integer, intent(in) :: n
    integer :: k
    bxor_upto = 0
    do k = 1, n
      bxor_upto = ieor(bxor_upto, k)
    end do
  end function

  integer function digits_upto(n)
    integer, intent(in) :: n
    integer :: k
    ! 1 2 3 ... in rank order
    digits_upto = 1
    do k = 1, n - 1
      digits_upto = digits_upto * 10 + mod(k, 9) + 1
    end do
  end function

end program f_coll
